// Package enginetest runs specs for tests and benchmarks: write a spec into
// a directory, compile it, open its store and run it, failing the test on
// any error.
package enginetest

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/stages"
	_ "github.com/eaglet-dev/eaglet/stages/all" // every built-in stage kind
	"github.com/eaglet-dev/eaglet/state"
)

// NoEnv is an environment with no variables set.
func NoEnv(string) (string, bool) { return "", false }

// Open writes spec to dir/spec.yaml, compiles it and opens its store; the
// store is closed when the test ends.
func Open(t testing.TB, dir, spec string) (*engine.Pipeline, *state.Store) {
	t.Helper()
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := engine.Load(path, NoEnv)
	if err != nil {
		t.Fatalf("load spec: %v", err)
	}
	store, err := state.Open(p.Spec.State)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return p, store
}

// LoadErr writes spec to dir/spec.yaml and returns what loading it says:
// nil for a valid spec, else every problem found.
func LoadErr(t testing.TB, dir, spec string) error {
	t.Helper()
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := engine.Load(path, NoEnv)
	return err
}

// Run runs nodes of p (nil: all) and returns the results by instance ID.
func Run(t testing.TB, p *engine.Pipeline, store *state.Store, nodes []*engine.Node) map[string]*engine.Result {
	t.Helper()
	results, err := p.Run(context.Background(), store, engine.RunOptions{Nodes: nodes, Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	out := make(map[string]*engine.Result, len(results))
	for _, r := range results {
		out[r.Node.ID] = r
	}
	return out
}

// OpenAndRun is Open followed by a run of everything.
func OpenAndRun(t testing.TB, dir, spec string) (*engine.Pipeline, *state.Store, map[string]*engine.Result) {
	t.Helper()
	p, store := Open(t, dir, spec)
	return p, store, Run(t, p, store, nil)
}

// Stage returns the instances of a stage, for runs of part of a pipeline.
func Stage(t testing.TB, p *engine.Pipeline, stage, dataset string) []*engine.Node {
	t.Helper()
	nodes, err := p.Select(stage, dataset, false)
	if err != nil {
		t.Fatal(err)
	}
	return nodes
}

// PeakRSSMiB reads the process's high-water resident memory (Linux).
func PeakRSSMiB() float64 {
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

// Count is how many of an instance's live records have the status.
func Count(t testing.TB, store *state.Store, id string, status stages.Status) int {
	t.Helper()
	counts, err := store.Counts(id)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, c := range counts {
		if c.Status == int(status) {
			n += c.N
		}
	}
	return n
}

// Log is a log a run (or a server) writes from its own goroutines while the
// test reads it.
type Log struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Log) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String is what was written so far.
func (l *Log) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Questions writes n distinct one-question conversations of varied lengths
// to a JSONL file in a temporary directory and returns its path.
func Questions(t testing.TB, n int) string {
	t.Helper()
	var b bytes.Buffer
	for i := range n {
		fmt.Fprintf(&b, `{"messages":[{"role":"user","content":"question %d%s"}]}`+"\n", i, bytes.Repeat([]byte("?"), i%7))
	}
	path := filepath.Join(t.TempDir(), "d.jsonl")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}
