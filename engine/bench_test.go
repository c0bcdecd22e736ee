package engine_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/rusage"
)

// BenchmarkPipeline_LoadCapFilterMerge pushes small records through
// load -> cap -> filter -> merge and reports committed records per second,
// the run's wall and CPU seconds and the process's peak memory. Where
// python3 is installed it then runs testdata/pipeline_baseline.py, the
// same work as a short script without a store, on the same file, and
// reports its seconds and eaglet's ratio to them, so both are measured in
// one session of a noisy machine. EAGLET_BENCH_RECORDS sets the size
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
	python, _ := exec.LookPath("python3")
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
		p, store := enginetest.Open(b, run, spec)
		start, cpu := time.Now(), rusage.CPU().Seconds()
		committed := 0
		for _, r := range enginetest.Run(b, p, store, nil) {
			committed += r.Processed
		}
		wall, cpu := time.Since(start).Seconds(), rusage.CPU().Seconds()-cpu
		b.ReportMetric(float64(committed)/wall, "records/s")
		b.ReportMetric(wall, "eaglet-s")
		b.ReportMetric(cpu, "eaglet-cpu-s")
		if fi, err := os.Stat(filepath.Join(run, "state.db")); err == nil {
			b.ReportMetric(float64(fi.Size())/(1<<20), "store-MiB")
		}
		if python == "" {
			continue
		}
		cmd := exec.Command(python, "testdata/pipeline_baseline.py", data, filepath.Join(run, "py.jsonl"), fmt.Sprint(n*9/10))
		cmd.Stderr = os.Stderr
		start = time.Now()
		if err := cmd.Run(); err != nil {
			b.Fatalf("python baseline: %v", err)
		}
		pyWall := time.Since(start).Seconds()
		pyCPU := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
		b.ReportMetric(pyWall, "python-s")
		b.ReportMetric(pyCPU, "python-cpu-s")
		b.ReportMetric(wall/pyWall, "ratio")
		b.ReportMetric(cpu/pyCPU, "cpu-ratio")
	}
	b.ReportMetric(enginetest.PeakRSSMiB(), "peak-MiB")
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

// BenchmarkPlan_AfterRun measures what plan costs on a store that holds a
// finished run of generated answers: the snapshot and the dry run, with
// nothing changed and after an option change that would regenerate all.
// EAGLET_BENCH_RECORDS sets the size (default 100,000):
//
//	go test ./engine -run '^$' -bench Plan_AfterRun -benchtime 1x
func BenchmarkPlan_AfterRun(b *testing.B) {
	n := 100_000
	if v := os.Getenv("EAGLET_BENCH_RECORDS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	dir := b.TempDir()
	data := filepath.Join(dir, "data.jsonl")
	writeRecords(b, data, n)
	spec := func(temp string) string {
		return fmt.Sprintf(`version: 1
name: bench
state: state.db
datasets:
  d: {source: %s, format: messages}
endpoints:
  sim: {api: sim, concurrency: 256, options: {mean_tokens: 20}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 64, temperature: %s}}
  - {name: filter, uses: filter, needs: [generate], foreach: datasets, with: {keep: "completion_tokens > 4"}}
`, data, temp)
	}
	p, store := enginetest.Open(b, dir, spec("0.7"))
	enginetest.Run(b, p, store, nil)
	for b.Loop() {
		if fi, err := os.Stat(filepath.Join(dir, "state.db")); err == nil {
			b.ReportMetric(float64(fi.Size())/(1<<20), "store-MiB")
		}
		for _, tc := range []struct{ name, temp string }{{"unchanged", "0.7"}, {"temperature", "0.9"}} {
			p, store := enginetest.Open(b, dir, spec(tc.temp))
			start := time.Now()
			for _, s := range p.Plan(store, engine.Selection{}) {
				if s.Err != nil {
					b.Fatal(s.Err)
				}
			}
			b.ReportMetric(time.Since(start).Seconds(), tc.name+"-s")
		}
	}
}
