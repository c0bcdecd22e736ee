package engine_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/state"
)

// BenchmarkPipeline_LoadCapFilterMerge pushes small records through
// load -> cap -> filter -> merge and reports committed records per second
// and the process's peak memory. EAGLET_BENCH_RECORDS sets the size
// (default 1,000,000):
//
//	go test ./engine -run '^$' -bench LoadCapFilterMerge -benchtime 1x
func BenchmarkPipeline_LoadCapFilterMerge(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("EAGLET_BENCH_RECORDS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	dir := b.TempDir()
	data := filepath.Join(dir, "data.jsonl")
	writeRecords(b, data, n)
	for i := 0; b.Loop(); i++ {
		run := filepath.Join(dir, fmt.Sprint(i))
		spec := fmt.Sprintf(`version: 1
name: bench
state: %[1]s/state.db
datasets:
  d: {source: %[2]s, format: messages}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: %[3]d, seed: 1}}
  - {name: filter, uses: filter, needs: [cap], foreach: datasets, with: {keep: "prompt_chars > 40"}}
  - {name: merge, uses: merge, needs: [filter], with: {out: %[1]s/out.jsonl, shuffle_seed: 2}}
`, run, data, n*9/10)
		os.MkdirAll(run, 0o755)
		path := filepath.Join(run, "spec.yaml")
		os.WriteFile(path, []byte(spec), 0o644)
		p, err := engine.Load(path, func(string) (string, bool) { return "", false })
		if err != nil {
			b.Fatal(err)
		}
		store, err := state.Open(p.Spec.State)
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		results, err := p.Run(context.Background(), store, engine.RunOptions{Log: &bytes.Buffer{}})
		if err != nil {
			b.Fatal(err)
		}
		store.Close()
		committed := 0
		for _, r := range results {
			committed += r.Processed
		}
		b.ReportMetric(float64(committed)/time.Since(start).Seconds(), "records/s")
	}
	b.ReportMetric(peakRSSMiB(), "peak-MiB")
}

func writeRecords(b *testing.B, path string, n int) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	for i := range n {
		fmt.Fprintf(w, `{"messages":[{"role":"user","content":"Question %d: how do I sort a list of %d numbers in place%s?"}]}`+"\n",
			i, i%997, strings.Repeat("!", i%23))
	}
	w.Flush()
	f.Close()
}

// peakRSSMiB reads the process's high-water resident memory (Linux).
func peakRSSMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmHWM:") {
			kb, _ := strconv.Atoi(strings.Fields(line)[1])
			return float64(kb) / 1024
		}
	}
	return 0
}
