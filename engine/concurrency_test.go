package engine_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
)

// TestRun_HugeConcurrencyCostsWhatIsInFlight: the most concurrency a spec
// may ask for costs a 20-record stage what 20 records cost, not what the
// number written would (before: 65,536 took 1.6 s and 76 MB here, and
// 1,000,000 took 20 s and 3.2 GB). The memory allocated says so whatever
// the machine's load; the time it took is only logged.
func TestRun_HugeConcurrencyCostsWhatIsInFlight(t *testing.T) {
	dir := t.TempDir()
	var rows strings.Builder
	for i := range 20 {
		rows.WriteString(`{"prompt":"question ` + string(rune('a'+i)) + `"}` + "\n")
	}
	os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte(rows.String()), 0o644)
	spec := `version: 1
name: huge
state: state.db
datasets: {a: {source: a.jsonl}}
endpoints: {sim: {api: sim, concurrency: 65536}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: g, uses: generate, needs: [load], foreach: datasets}
  - {name: f, uses: filter, needs: [g], foreach: datasets, concurrency: 65536, with: {keep: "true"}}
`
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	_, _, results := enginetest.OpenAndRun(t, dir, spec)
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	if results["f[a]"].Processed != 20 {
		t.Fatalf("filter processed %d records; want 20", results["f[a]"].Processed)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("20 records at concurrency 65536: %v, %.1f MB allocated", elapsed.Round(time.Millisecond), float64(alloc)/1e6)
	if alloc > 20<<20 {
		t.Errorf("20 records at concurrency 65536 allocated %d MB; want what 20 records cost", alloc>>20)
	}
}

// TestLoad_AbsurdConcurrency: numbers no machine can honour are refused at
// validation with the limit, not by the runtime running out of memory.
func TestLoad_AbsurdConcurrency(t *testing.T) {
	tests := []struct{ name, spec, want string }{
		{"endpoint", strings.Replace(validBase, "sim: {api: sim}", "sim: {api: sim, concurrency: 50000000}", 1),
			"spec.yaml:7:8: endpoint sim: concurrency 50000000 is more than one machine can keep open to a server (at most 65536)"},
		{"stage", validBase + "  - {name: f, uses: filter, needs: [load], foreach: datasets, concurrency: 50000000, with: {keep: \"true\"}}\n",
			"f[a]: concurrency evaluates to 50000000; want at most 65536"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "spec.yaml")
			os.WriteFile(filepath.Join(dir, "a.jsonl"), nil, 0o644)
			os.WriteFile(path, []byte(tt.spec), 0o644)
			p, err := engine.Load(path, enginetest.NoEnv)
			if err == nil {
				err = p.Check()
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v; want %q", err, tt.want)
			}
		})
	}
}
