package engine_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// lastStops is a Mapper that stops the run (as Ctrl-C does) while it
// processes the last of its records, and still finishes that record.
type lastStops struct{}

var (
	lastStopsLeft atomic.Int64
	lastStopsStop context.CancelFunc
)

func (lastStops) Process(_ context.Context, rec *conv.Record) (stages.Outcome, error) {
	if lastStopsLeft.Add(-1) == 0 {
		lastStopsStop()
	}
	return stages.Outcome{Status: stages.Done}, nil
}

func init() {
	stages.Register(stages.Kind{Name: "test-laststops", Options: func() any { return &struct{}{} },
		New: func(*stages.Instance) (stages.Stage, error) { return lastStops{}, nil }})
}

// TestRun_StopAfterEveryRecordIsDone: a stop that comes once every record
// of an instance has its outcome (its last answers finished while the run
// was stopping) leaves the instance done, not incomplete for the next run;
// what comes after it is left to that run.
func TestRun_StopAfterEveryRecordIsDone(t *testing.T) {
	dir := t.TempDir()
	var data bytes.Buffer
	for i := range 5 {
		fmt.Fprintf(&data, `{"messages":[{"role":"user","content":"q%d"}]}`+"\n", i)
	}
	os.WriteFile(filepath.Join(dir, "d.jsonl"), data.Bytes(), 0o644)
	spec := "version: 1\nname: s\nstate: s.db\ndatasets: {d: {source: d.jsonl}}\nstages:\n" +
		"  - {name: load, uses: load, foreach: datasets}\n" +
		"  - {name: stops, uses: test-laststops, needs: [load], foreach: datasets, concurrency: 1}\n" +
		"  - {name: after, uses: filter, needs: [stops], foreach: datasets, with: {keep: 'true'}}\n"
	p, store := enginetest.Open(t, dir, spec)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lastStopsLeft.Store(5)
	lastStopsStop = cancel
	results, err := p.Run(ctx, store, engine.RunOptions{Log: &bytes.Buffer{}})
	if !errors.Is(err, engine.ErrInterrupted) {
		t.Fatalf("run: %v; want interrupted", err)
	}
	actions := map[string]string{}
	for _, r := range results {
		actions[r.Node.ID] = r.Outcome.String()
	}
	if actions["stops[d]"] != "ran" || actions["after[d]"] != "interrupted" {
		t.Errorf("stops[d] %q, after[d] %q; want ran, and interrupted before it started", actions["stops[d]"], actions["after[d]"])
	}
	inst, err := store.GetInstance("stops[d]")
	if err != nil || inst == nil || inst.Status != state.StatusDone {
		t.Errorf("stops[d] is stored as %+v (%v); want done", inst, err)
	}
}
