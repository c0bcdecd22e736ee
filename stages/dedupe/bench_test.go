package dedupe_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
)

// BenchmarkDedupe_Prompts dedupes synthetic prompts in three datasets
// through the real engine and store: 80% distinct, 10% exact copies of an
// earlier prompt (in other case and spacing, with another answer) and 10%
// near copies (one of the last three words replaced, a Jaccard similarity
// of 0.88 to 0.96). It reports the dedupe instance's time, the process's
// peak memory while it ran, and the share of copies found.
// EAGLET_BENCH_RECORDS sets the size (default 1,000,000):
//
//	go test ./stages/dedupe -run '^$' -bench Dedupe_Prompts -benchtime 1x
func BenchmarkDedupe_Prompts(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("EAGLET_BENCH_RECORDS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	dir := b.TempDir()
	copies := writePrompts(b, dir, n)
	for i := 0; b.Loop(); i++ {
		run := filepath.Join(dir, fmt.Sprint(i))
		os.MkdirAll(run, 0o755)
		spec := fmt.Sprintf(`version: 1
name: bench
state: %[1]s/state.db
datasets:
  a: {source: %[2]s/a.jsonl, format: messages}
  b: {source: %[2]s/b.jsonl, format: messages}
  c: {source: %[2]s/c.jsonl, format: messages}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: dedupe, uses: dedupe, needs: [load]}
`, run, dir)
		p, store := enginetest.Open(b, run, spec)
		enginetest.Run(b, p, store, enginetest.Stage(b, p, "load", ""))
		runtime.GC()
		debug.FreeOSMemory()
		// Writing 5 to clear_refs resets the peak RSS to the current RSS
		// (Linux), so the peak is the dedupe's own.
		os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
		var peakHeap atomic.Uint64
		stop := make(chan struct{})
		go func() {
			var ms runtime.MemStats
			for {
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peakHeap.Load() {
					peakHeap.Store(ms.HeapInuse)
				}
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
		start := time.Now()
		enginetest.Run(b, p, store, enginetest.Stage(b, p, "dedupe", ""))
		secs := time.Since(start).Seconds()
		close(stop)
		in, err := store.GetInstance("dedupe")
		if err != nil {
			b.Fatal(err)
		}
		dropped := 0
		for _, c := range in.Stats.Dropped {
			dropped += c
		}
		b.ReportMetric(secs, "dedupe-s")
		b.ReportMetric(float64(n)/secs, "prompts/s")
		b.ReportMetric(enginetest.PeakRSSMiB(), "peak-RSS-MiB")
		b.ReportMetric(float64(peakHeap.Load())/(1<<20), "peak-heap-MiB")
		b.ReportMetric(float64(dropped)/float64(copies), "dropped/copies")
	}
}

// writePrompts writes n prompts into a.jsonl, b.jsonl and c.jsonl in turn
// and returns how many are copies. Prompt i is made from seed i, so a copy
// remakes its original from its index.
func writePrompts(b *testing.B, dir string, n int) int {
	var ws []*bufio.Writer
	for _, name := range []string{"a", "b", "c"} {
		f, err := os.Create(filepath.Join(dir, name+".jsonl"))
		if err != nil {
			b.Fatal(err)
		}
		defer f.Close()
		w := bufio.NewWriter(f)
		defer w.Flush()
		ws = append(ws, w)
	}
	prompt := func(i int) []string {
		r := rand.New(rand.NewPCG(uint64(i), 7))
		words := make([]string, 40+r.IntN(21))
		for j := range words {
			words[j] = "w" + strconv.Itoa(r.IntN(20000))
		}
		return words
	}
	r := rand.New(rand.NewPCG(1, 1))
	var originals []int
	for i := range n {
		words := prompt(i)
		switch x := r.Float64(); {
		case len(originals) > 0 && x < 0.1:
			words = prompt(originals[r.IntN(len(originals))])
			words[0] = strings.ToUpper(words[0])
			words = append(words, "")
		case len(originals) > 0 && x < 0.2:
			words = prompt(originals[r.IntN(len(originals))])
			words[len(words)-1-r.IntN(3)] = "changed"
		default:
			originals = append(originals, i)
		}
		line, _ := json.Marshal(map[string]any{"messages": []map[string]string{
			{"role": "user", "content": strings.Join(words, "  ")},
			{"role": "assistant", "content": "answer " + strconv.Itoa(i)},
		}})
		ws[i%3].Write(append(line, '\n'))
	}
	return n - len(originals)
}
