package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages"
)

// starterStage is a Mapper with costly setup, counting its starts.
type starterStage struct{}

var starts atomic.Int64

func (starterStage) Start() error { starts.Add(1); return nil }
func (starterStage) Process(context.Context, *conv.Record) (stages.Outcome, error) {
	return stages.Outcome{Status: stages.Done}, nil
}

func init() {
	stages.Register(stages.Kind{Name: "test-starter", Options: func() any { return &struct{}{} },
		New: func(*stages.Instance) (stages.Stage, error) { return starterStage{}, nil }})
}

// TestStarter_OnlyWhenItRuns: a stage's costly setup (a tokenizer's load)
// is done when the instance runs, in plan's dry run and in validation, and
// not when the instance is up to date.
func TestStarter_OnlyWhenItRuns(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(`{"messages":[{"role":"user","content":"hi"}]}`+"\n"), 0o644)
	spec := "version: 1\nname: s\nstate: s.db\ndatasets: {d: {source: d.jsonl}}\nstages:\n" +
		"  - {name: load, uses: load, foreach: datasets}\n" +
		"  - {name: setup, uses: test-starter, needs: [load], foreach: datasets}\n"
	p, store := enginetest.Open(t, dir, spec)
	steps := []struct {
		name string
		do   func()
		want int64
	}{
		{"plan before the first run", func() { p.Plan(store, engine.Selection{}) }, 1},
		{"the first run", func() { enginetest.Run(t, p, store, nil) }, 1},
		{"a run with the instance up to date", func() { enginetest.Run(t, p, store, nil) }, 0},
		{"plan with the instance up to date", func() { p.Plan(store, engine.Selection{}) }, 0},
		{"validation", func() {
			if err := p.Check(); err != nil {
				t.Fatal(err)
			}
		}, 1},
	}
	for _, s := range steps {
		before := starts.Load()
		s.do()
		if got := starts.Load() - before; got != s.want {
			t.Errorf("%s started the stage %d times; want %d", s.name, got, s.want)
		}
	}
}
