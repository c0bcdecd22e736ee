package generate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
	"github.com/eaglet-dev/eaglet/stages"
)

// TestResume_DispatchesAtOnce: a run stopped half-way records that its
// outcomes match its input, so the next run sends at once what is left,
// nothing twice, and tells what was done before once it has counted it in
// the background, without counting this run's answers as earlier ones.
func TestResume_DispatchesAtOnce(t *testing.T) {
	const n = 300
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 3, MeanTokens: 20}), Speed: 400})
	dir := t.TempDir()
	writePrompts(t, filepath.Join(dir, "prompts.jsonl"), n)
	p, store := enginetest.Open(t, dir, fmt.Sprintf(`version: 1
name: resume
state: state.db
datasets:
  d: {source: prompts.jsonl}
endpoints:
  sim: {api: openai, urls: ["%s/v1"], concurrency: 10}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 64}}
`, srv.URL))

	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for srv.Count() < n/4 {
			time.Sleep(5 * time.Millisecond)
		}
		cancel()
	}()
	if _, err := p.Run(ctx, store, engine.RunOptions{Log: &bytes.Buffer{}}); !errors.Is(err, engine.ErrInterrupted) {
		t.Fatalf("first run: %v; want it interrupted", err)
	}
	gen, err := store.GetInstance("generate[d]")
	if err != nil || gen == nil || gen.Status != "running" || gen.InputDigest == "" || gen.Stats.Settled == 0 {
		t.Fatalf("after the stop generate[d] is %+v (%v); want it running, matched and settled", gen, err)
	}
	counts, err := store.Counts("generate[d]")
	if err != nil {
		t.Fatal(err)
	}
	before := 0
	for _, c := range counts {
		if c.Status == int(stages.Done) {
			before += c.N
		}
	}
	if before == 0 || before == n {
		t.Fatalf("%d of %d done after the stop; want some", before, n)
	}

	srv.Take()
	var log bytes.Buffer
	results, err := p.Run(context.Background(), store, engine.RunOptions{Log: &log})
	if err != nil {
		t.Fatal(err)
	}
	if got := results[len(results)-1].Processed; got != n-before {
		t.Errorf("the resumed run processed %d; want the %d left", got, n-before)
	}
	if sent := srv.Take(); sent != n-before {
		t.Errorf("the resumed run sent %d requests; want the %d left", sent, n-before)
	}
	if want := fmt.Sprintf("generate[d]: %d already done, %d to go", before, n-before); !strings.Contains(log.String(), want) {
		t.Errorf("the resumed run's log does not say %q:\n%s", want, log.String())
	}
}
