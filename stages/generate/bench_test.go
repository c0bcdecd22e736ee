package generate_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/rusage"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
)

// BenchmarkGenerate_RequestsPerSecond measures what the engine sustains end
// to end (dispatch, HTTP to the sim server, checkpoint) with 1,000 requests
// in flight and answers at instant speed, on each API path: chat, chat
// streaming, SGLang's /generate and /generate streaming (with token ids from
// a tokenize stage run before the clock starts). It reports requests per
// second and the client's CPU time per request (user and system time of the
// process, the sim server's included unless EAGLET_BENCH_URL points at a
// separate one). EAGLET_BENCH_REQUESTS sets the number of prompts (default
// 20,000); EAGLET_BENCH_CPUPROFILE=FILE profiles each case's generation
// alone (FILE.openai, ...). After each case it runs the Python baseline,
// testdata/aiohttp_client.py, on the same server and prompts, and reports
// its requests per second, its CPU per request and eaglet's rate over
// its (x-python); without Debian's python3-aiohttp it logs why and skips
// that part. Last it runs bareClient, the same loop in Go on net/http with
// nothing of eaglet, and reports its rate, its CPU per request and its
// rate over the Python client's (bare-x-python): the ceiling of a client
// that checkpoints nothing.
//
//	go test ./stages/generate -run '^$' -bench RequestsPerSecond -benchtime 1x
func BenchmarkGenerate_RequestsPerSecond(b *testing.B) {
	n := 20_000
	if v := os.Getenv("EAGLET_BENCH_REQUESTS"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	tokDir, err := filepath.Abs("../../internal/tokenizer/testdata/qwen3")
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct{ name, endpoint string }{
		{"openai", `api: openai, urls: ["%s/v1"]`},
		{"openai-stream", `api: openai, urls: ["%s/v1"], options: {stream: true}`},
		{"sglang", `api: sglang, urls: [%q]`},
		{"sglang-stream", `api: sglang, urls: [%q], options: {stream: true}`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			// EAGLET_BENCH_URL points at a separate `eaglet sim-server`, so a
			// profile shows the client alone.
			url := os.Getenv("EAGLET_BENCH_URL")
			if url == "" {
				url = simtest.Serve(b, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 50})})
			}
			dir := b.TempDir()
			writePrompts(b, filepath.Join(dir, "prompts.jsonl"), n)
			for i := 0; b.Loop(); i++ {
				spec := fmt.Sprintf(`version: 1
name: rps
state: state%d.db
datasets:
  d: {source: prompts.jsonl}
endpoints:
  sim: {`+tc.endpoint+`, concurrency: 1000}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: tokenize, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: %s}}
  - {name: generate, uses: generate, needs: [tokenize], foreach: datasets, concurrency: 1000, with: {max_tokens: 256}}
`, i, url, tokDir)
				p, store := enginetest.Open(b, dir, spec)
				// Load and tokenize first, so the clock measures generation alone.
				enginetest.Run(b, p, store, enginetest.Stage(b, p, "tokenize", ""))
				stopProfile := profileCPU(b, tc.name)
				cpu0, start := rusage.CPU(), time.Now()
				results := enginetest.Run(b, p, store, nil)
				stopProfile()
				done := results["generate[d]"].Processed
				rate := float64(done) / time.Since(start).Seconds()
				b.ReportMetric(rate, "requests/s")
				b.ReportMetric(float64((rusage.CPU()-cpu0).Microseconds())/float64(done), "cpu-us/request")
				// The Python client right after, on the same server and
				// prompts, so the ratio compares like with like.
				py, havePython := runPythonBaseline(b, url, n, tc.name, dir)
				if havePython {
					b.ReportMetric(py.rate(), "python-requests/s")
					b.ReportMetric(py.cpuPerRequest(), "python-cpu-us/request")
					b.ReportMetric(rate/py.rate(), "x-python")
				}
				// The ceiling: the same loop in Go on net/http alone.
				bare := bareClient(b, url, n, tc.name, filepath.Join(dir, "bare-"+tc.name+".jsonl"))
				b.ReportMetric(bare.rate(), "bare-requests/s")
				b.ReportMetric(bare.cpuPerRequest(), "bare-cpu-us/request")
				if havePython {
					b.ReportMetric(bare.rate()/py.rate(), "bare-x-python")
				}
			}
		})
	}
}

// pythonRun is what testdata/aiohttp_client.py prints.
type pythonRun struct {
	Requests   int     `json:"requests"`
	Seconds    float64 `json:"seconds"`
	CPUSeconds float64 `json:"cpu_seconds"`
}

func (p pythonRun) rate() float64 { return float64(p.Requests) / p.Seconds }

func (p pythonRun) cpuPerRequest() float64 { return p.CPUSeconds * 1e6 / float64(p.Requests) }

// runPythonBaseline runs the asyncio + aiohttp client on the same case
// against url (the server's root). It needs Debian's python3-aiohttp
// (EAGLET_BENCH_PYTHON names another interpreter, default
// /usr/bin/python3); without it the benchmark says so and measures eaglet
// alone.
func runPythonBaseline(b *testing.B, url string, n int, mode, dir string) (pythonRun, bool) {
	b.Helper()
	python := cmp.Or(os.Getenv("EAGLET_BENCH_PYTHON"), "/usr/bin/python3")
	if err := exec.Command(python, "-c", "import aiohttp").Run(); err != nil {
		b.Logf("no Python baseline: %s cannot import aiohttp (%v); apt-get install python3-aiohttp, or set EAGLET_BENCH_PYTHON", python, err)
		return pythonRun{}, false
	}
	out, err := exec.Command(python, "testdata/aiohttp_client.py", url, strconv.Itoa(n), mode,
		filepath.Join(dir, "python-"+mode+".jsonl")).Output()
	if err != nil {
		b.Fatalf("Python baseline: %v", err)
	}
	var run pythonRun
	if err := json.Unmarshal(out, &run); err != nil || run.Requests == 0 || run.Seconds <= 0 {
		b.Fatalf("Python baseline printed %q: %v", out, err)
	}
	if run.Requests != n {
		b.Fatalf("Python baseline answered %d of %d requests", run.Requests, n)
	}
	return run, true
}

// profileCPU writes a CPU profile of what follows until the returned
// function is called, to EAGLET_BENCH_CPUPROFILE with the case's name
// appended, when that is set: go test's -cpuprofile would take in the
// loading and tokenizing before the clock too.
func profileCPU(b *testing.B, name string) func() {
	path := os.Getenv("EAGLET_BENCH_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path + "." + name)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// BenchmarkGenerate_QueuedPrompts runs the in-process simulator at instant
// speed over many queued prompts and reports throughput and the process's
// peak memory, which must not grow with the queue: pending records are read
// from the store page by page. EAGLET_BENCH_QUEUED sets the number of
// prompts (default 1,000,000):
//
//	go test ./stages/generate -run '^$' -bench QueuedPrompts -benchtime 1x
func BenchmarkGenerate_QueuedPrompts(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("EAGLET_BENCH_QUEUED"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	dir := b.TempDir()
	writePrompts(b, filepath.Join(dir, "prompts.jsonl"), n)
	for i := 0; b.Loop(); i++ {
		spec := fmt.Sprintf(`version: 1
name: queued
state: state%d.db
datasets:
  d: {source: prompts.jsonl}
endpoints:
  sim: {api: sim, concurrency: 1000, options: {mean_tokens: 20}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 64}}
`, i)
		p, store := enginetest.Open(b, dir, spec)
		start := time.Now()
		results := enginetest.Run(b, p, store, nil)
		b.ReportMetric(float64(results["generate[d]"].Processed)/time.Since(start).Seconds(), "records/s")
	}
	b.ReportMetric(enginetest.PeakRSSMiB(), "peak-MiB")
}
