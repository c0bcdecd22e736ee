package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// benchDocs splits the mixed corpus (testdata/bench, see gen/corpus.py)
// into documents of about 4 KiB at line ends, as gen/bench.js does.
func benchDocs(b testing.TB) ([]string, int) {
	data, err := readGz(filepath.Join(testdata, "bench", "corpus.txt.gz"))
	if err != nil {
		b.Fatal(err)
	}
	var docs []string
	var cur strings.Builder
	for line := range strings.SplitAfterSeq(string(data), "\n") {
		cur.WriteString(line)
		if cur.Len() >= 4096 {
			docs = append(docs, cur.String())
			cur.Reset()
		}
	}
	if cur.Len() > 0 {
		docs = append(docs, cur.String())
	}
	return docs, len(data)
}

var benchModels = []string{"qwen3", "llama3", "deepseek_v3", "gpt4o", "llama2"}

// BenchmarkEncode encodes the corpus on one goroutine; MB/s is input bytes.
func BenchmarkEncode(b *testing.B) {
	docs, size := benchDocs(b)
	for _, name := range benchModels {
		b.Run(name, func(b *testing.B) {
			tk := loadModel(b, name)
			b.SetBytes(int64(size))
			tokens := 0
			for b.Loop() {
				for _, d := range docs {
					tokens += len(tk.Encode(d, false))
				}
			}
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkEncodeParallel encodes documents from GOMAXPROCS goroutines at once.
func BenchmarkEncodeParallel(b *testing.B) {
	docs, _ := benchDocs(b)
	avg := 0
	for _, d := range docs {
		avg += len(d)
	}
	avg /= len(docs)
	for _, name := range benchModels {
		b.Run(name, func(b *testing.B) {
			tk := loadModel(b, name)
			b.SetBytes(int64(avg))
			var tokens, next atomic.Int64
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					d := docs[int(next.Add(1))%len(docs)]
					tokens.Add(int64(len(tk.Encode(d, false))))
				}
			})
			b.ReportMetric(float64(tokens.Load())/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkEncodePathological encodes 1 MiB runs of one character class,
// where naive BPE merging is quadratic.
func BenchmarkEncodePathological(b *testing.B) {
	for _, tc := range pathological {
		b.Run(tc.name, func(b *testing.B) {
			tk := loadModel(b, "llama3")
			text := strings.Repeat(tc.unit, (1<<20)/len(tc.unit))
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				tk.Encode(text, false)
			}
		})
	}
}

var pathological = []struct{ name, unit string }{
	{"letters", "a"},
	{"spaces", " "},
	{"digits", "7"},
	{"punct", "!"},
	{"cjk", "我"},
	{"mixed-word", "ab"},
}

// BenchmarkLoad loads Qwen3's tokenizer (151,669 tokens) from its gzip
// file and, as model directories hold it, uncompressed.
func BenchmarkLoad(b *testing.B) {
	plain := b.TempDir()
	for _, f := range []string{fileTokenizer, fileConfig} {
		data, err := readGz(filepath.Join(testdata, "qwen3", f+".gz"))
		if err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(plain, f), data, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for name, dir := range map[string]string{"gzip": filepath.Join(testdata, "qwen3"), "plain": plain} {
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Load(dir); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestEncode_LinearTime checks that long single-class runs stay fast: a
// quadratic merge would take minutes on these.
func TestEncode_LinearTime(t *testing.T) {
	if testing.Short() {
		t.Skip("slow")
	}
	tk := loadModel(t, "llama3")
	for _, tc := range pathological {
		text := strings.Repeat(tc.unit, (256<<10)/len(tc.unit))
		start := time.Now()
		ids := tk.Encode(text, false)
		if d := time.Since(start); d > 3*time.Second {
			t.Errorf("%s: %d bytes took %v", tc.name, len(text), d)
		}
		if got := tk.Decode(ids); got != text {
			t.Errorf("%s: decode does not round-trip", tc.name)
		}
	}
}
