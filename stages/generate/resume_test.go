package generate_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// TestResume_DispatchesAtOnce: a run stopped half-way records that its
// outcomes match its input, so the next run sends at once what is left,
// nothing twice, and tells what was done before once it has counted it in
// the background, without counting this run's answers as earlier ones.
func TestResume_DispatchesAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 300
		srv := serveCountingSim(t, server.Config{Model: sim.New(sim.Config{Seed: 3, MeanTokens: 20}), Speed: 400})
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
		if err != nil || gen == nil || gen.Status != "running" || gen.InputDigest == "" {
			t.Fatalf("after the stop generate[d] is %+v (%v); want it running, its outcomes matched to its input", gen, err)
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
	})
}

// TestResume_ReusesWhatAnotherDatasetAnsweredSince: a dataset killed
// half-way, then another dataset holding the same prompts run to the end,
// then the first resumed: the first dispatches at once (it is settled) yet
// sends nothing the other answered since, looking for each record's answer
// as it dispatches it; killed again, the next run still does.
func TestResume_ReusesWhatAnotherDatasetAnsweredSince(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const n = 200
		srv := serveCountingSim(t, server.Config{Model: sim.New(sim.Config{Seed: 3, MeanTokens: 20}), Speed: 400})
		dir := t.TempDir()
		writePrompts(t, filepath.Join(dir, "prompts.jsonl"), n)
		writePrompts(t, filepath.Join(dir, "copy.jsonl"), n)
		spec := func(ds string) string {
			return fmt.Sprintf(`version: 1
name: resume
state: state.db
datasets:
  %s
endpoints:
  sim: {api: openai, urls: ["%s/v1"], concurrency: 10}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 64}}
`, ds, srv.URL)
		}
		onlyD, onlyE := spec("d: {source: prompts.jsonl}"), spec("e: {source: copy.jsonl}")
		// run runs a spec, stopped after stopAfter requests when it is above 0,
		// and returns the last result and what the server received.
		run := func(spec string, stopAfter int) (*engine.Result, int) {
			t.Helper()
			p, store := enginetest.Open(t, dir, spec)
			defer store.Close()
			srv.Take()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if stopAfter > 0 {
				go func() {
					for srv.Count() < stopAfter {
						time.Sleep(2 * time.Millisecond)
					}
					cancel()
				}()
			}
			results, err := p.Run(ctx, store, engine.RunOptions{Log: &bytes.Buffer{}})
			if stopAfter > 0 != errors.Is(err, engine.ErrInterrupted) {
				t.Fatalf("run stopping after %d: %v", stopAfter, err)
			}
			return results[len(results)-1], srv.Take()
		}
		// instance reads what the store says of an instance: when it last
		// looked for answers to reuse, and the requests its answers took.
		instance := func(id string) (settled int64, requests int) {
			t.Helper()
			store, err := state.Open(filepath.Join(dir, "state.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer store.Close()
			in, err := store.GetInstance(id)
			if err != nil || in == nil {
				t.Fatalf("%s: %+v, %v", id, in, err)
			}
			if requests, _, err = store.Requests(id); err != nil {
				t.Fatal(err)
			}
			return in.Stats.Settled, requests
		}
		run(onlyD, n/4)
		looked, _ := instance("generate[d]")
		if res, _ := run(onlyE, n/4); res.Reused == 0 {
			t.Fatalf("e reused none of d's answers")
		}
		_, eAsked := instance("generate[e]")
		// Killed again before every record was dispatched: the time of its
		// last complete look stands, so the next run looks again.
		first, _ := run(onlyD, 1)
		if got, _ := instance("generate[d]"); got != looked {
			t.Errorf("d killed while looking record by record recorded its last look at %d; want the complete one at %d", got, looked)
		}
		last, _ := run(onlyD, 0)
		// Every answer e asked for was pending in d: d reused each one and
		// asked for none of them.
		if reused := first.Reused + last.Reused; reused != eAsked {
			t.Errorf("resumed d reused %d answers; want the %d e asked for since d last looked", reused, eAsked)
		}
	})
}
