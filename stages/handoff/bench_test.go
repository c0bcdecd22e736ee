package handoff_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/rusage"
)

// BenchmarkHandoff_Rows measures the handoff alone over answered records:
// prompts answered by the in-process sim (300 tokens on average), then
// speculators rows built with Qwen3's tokenizer and template (every turn
// rendered, tokenized, fitted to the window and written). It reports rows
// per second and CPU per row. EAGLET_BENCH_RECORDS sets the records
// (default 5,000):
//
//	go test ./stages/handoff -run '^$' -bench Handoff_Rows -benchtime 1x
func BenchmarkHandoff_Rows(b *testing.B) {
	n := 5_000
	if v := os.Getenv("EAGLET_BENCH_RECORDS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	tokDir, err := filepath.Abs("../../internal/tokenizer/testdata/qwen3")
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	var rows bytes.Buffer
	for i := range n {
		fmt.Fprintf(&rows, `{"messages":[{"role":"system","content":"You are a helpful assistant."},{"role":"user","content":"Question %d: explain idea %d in detail, with an example."},{"role":"assistant","content":"An earlier answer."}]}`+"\n", i, i*7)
	}
	if err := os.WriteFile(filepath.Join(dir, "prompts.jsonl"), rows.Bytes(), 0o644); err != nil {
		b.Fatal(err)
	}
	for i := 0; b.Loop(); i++ {
		p, store := enginetest.Open(b, dir, fmt.Sprintf(`version: 1
name: handoff-bench
state: state%d.db
datasets: {d: {source: prompts.jsonl, format: messages}}
endpoints: {sim: {api: sim, options: {seed: 2, mean_tokens: 300}}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: tokenize, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: %q}}
  - {name: generate, uses: generate, needs: [tokenize], foreach: datasets, with: {max_tokens: 2048}}
  - {name: handoff, uses: handoff, needs: [generate], with: {out: out%d, shards: 4, max_length: 4096}}
`, i, tokDir, i))
		enginetest.Run(b, p, store, enginetest.Stage(b, p, "generate", ""))
		cpu0, start := rusage.CPU(), time.Now()
		res := enginetest.Run(b, p, store, nil)["handoff"]
		took, cpu := time.Since(start), rusage.CPU()-cpu0
		rows := res.Processed
		if rows == 0 {
			b.Fatalf("the handoff wrote no rows: %+v", res)
		}
		b.ReportMetric(float64(rows)/took.Seconds(), "rows/s")
		b.ReportMetric(float64(cpu.Microseconds())/float64(rows), "cpu-us/row")
		store.Close()
	}
}
