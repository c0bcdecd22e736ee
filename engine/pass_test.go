package engine_test

import (
	"bytes"
	"context"
	"database/sql"
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

// passStop, when set, stops a run once a test-stopping-filter has
// decided its count of records.
var passStop atomic.Pointer[countdown]

// countdown calls stop when its last record is decided.
type countdown struct {
	left atomic.Int64
	stop func()
}

// stoppingFilter is the filter kind, whose pass stops the run through
// passStop: at a record, not at whatever moment a watcher of the store
// gets to run on a loaded machine.
type stoppingFilter struct{ stages.Mapper }

func (f stoppingFilter) Process(ctx context.Context, rec *conv.Record) (stages.Outcome, error) {
	if c := passStop.Load(); c != nil && c.left.Add(-1) == 0 {
		c.stop()
	}
	return f.Mapper.Process(ctx, rec)
}

func (stoppingFilter) Pure() {}

func init() {
	k, ok := stages.Lookup("filter")
	if !ok {
		panic("no filter kind registered")
	}
	newFilter := k.New
	k.Name, k.New = "test-stopping-filter", func(inst *stages.Instance) (stages.Stage, error) {
		st, err := newFilter(inst)
		if err != nil {
			return nil, err
		}
		return stoppingFilter{st.(stages.Mapper)}, nil
	}
	stages.Register(k)
}

// TestRun_FilterPassResumes: a filter (a stages.Pure stage, run as one
// pass) stopped mid-pass keeps every outcome it committed, drop reasons
// included; the next run decides only the records left, none twice, and
// its output file and counts are those of an uninterrupted run.
func TestRun_FilterPassResumes(t *testing.T) {
	// Enough records for several of the pass's commits before the stop
	// and after it.
	const n, stopAt = 10_000, 4_000
	data := enginetest.Questions(t, n)
	spec := `version: 1
name: pass
state: state.db
datasets:
  d: {source: ` + data + `, format: messages}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: filter, uses: test-stopping-filter, needs: [load], foreach: datasets, with: {keep: "prompt_chars % 7 != 3"}}
  - {name: merge, uses: merge, needs: [filter], with: {out: out.jsonl, shuffle_seed: 3}}
`
	refDir, dir := t.TempDir(), t.TempDir()
	_, refStore, _ := enginetest.OpenAndRun(t, refDir, spec)
	wantCounts, err := refStore.Counts("filter[d]")
	if err != nil {
		t.Fatal(err)
	}
	checkDigest(t, refStore, "filter[d]")

	p, store := enginetest.Open(t, dir, spec)
	enginetest.Run(t, p, store, enginetest.Stage(t, p, "load", ""))
	// Stop the pass once it has decided stopAt records.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stop := &countdown{stop: cancel}
	stop.left.Store(stopAt)
	passStop.Store(stop)
	results, err := p.Run(ctx, store, engine.RunOptions{Nodes: enginetest.Stage(t, p, "filter", ""), Log: &bytes.Buffer{}})
	passStop.Store(nil)
	if err != nil && ctx.Err() == nil {
		t.Fatal(err)
	}
	var first int
	for _, r := range results {
		if r.Node.ID == "filter[d]" {
			if r.Outcome != engine.Interrupted {
				t.Fatalf("filter %s; the stop must land mid-pass (a larger input?)", r.Outcome)
			}
			first = r.Processed
		}
	}
	committed := 0
	c, err := store.Counts("filter[d]")
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range c {
		committed += x.N
	}
	if committed == 0 || committed >= n || committed != first {
		t.Fatalf("the stopped pass committed %d outcomes and says it processed %d, of %d", committed, first, n)
	}

	rest := enginetest.Run(t, p, store, nil)
	if got := rest["filter[d]"].Processed; got != n-committed {
		t.Errorf("the resumed pass processed %d records; want the %d left", got, n-committed)
	}
	gotCounts, err := store.Counts("filter[d]")
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(gotCounts) != fmt.Sprint(wantCounts) {
		t.Errorf("counts after resuming %v; uninterrupted %v", gotCounts, wantCounts)
	}
	if !hasDropReason(gotCounts, stages.Dropped, "keep: prompt_chars % 7 != 3") {
		t.Errorf("no drop counted under its expression: %v", gotCounts)
	}
	want, _ := os.ReadFile(filepath.Join(refDir, "out.jsonl"))
	got, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if len(want) == 0 || !bytes.Equal(got, want) {
		t.Errorf("output after resuming differs from an uninterrupted run (%d vs %d bytes)", len(got), len(want))
	}
	checkDigest(t, store, "filter[d]")
	if twice := committedTwice(t, filepath.Join(dir, "state.db"), "filter[d]"); twice != 0 {
		t.Errorf("%d outcomes were committed twice", twice)
	}
}

func hasDropReason(counts []state.Count, st stages.Status, reason string) bool {
	for _, c := range counts {
		if c.Status == int(st) && c.Reason == reason && c.N > 0 {
			return true
		}
	}
	return false
}

// committedTwice counts an instance's rows committed more than once.
func committedTwice(t *testing.T, path, inst string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM items WHERE instance = ? AND attempts > 1`, inst).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// checkDigest: the output digest an instance was saved with is its stored
// output's, which the next run's up-to-date decision compares.
func checkDigest(t *testing.T, store *state.Store, inst string) {
	t.Helper()
	in, err := store.GetInstance(inst)
	if err != nil || in == nil {
		t.Fatalf("%s: %v", inst, err)
	}
	want, records, err := store.OutputDigest(context.Background(), inst)
	if err != nil {
		t.Fatal(err)
	}
	if in.OutputDigest != want || in.Stats.Records != records {
		t.Errorf("%s saved with digest %s of %d records; its output's is %s of %d", inst, in.OutputDigest, in.Stats.Records, want, records)
	}
}

// TestRun_FilterCountsItsPendingInput: a filter with no outcome yet, on a
// first run and after a run stopped before its first commit, has all of
// its input to do, which its start line says without counting anything
// as already done (the input is counted once, not read to count it).
func TestRun_FilterCountsItsPendingInput(t *testing.T) {
	data := enginetest.Questions(t, 500)
	spec := `version: 1
name: pending
state: state.db
datasets:
  d: {source: ` + data + `, format: messages}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: 300, seed: 1}}
  - {name: filter, uses: filter, needs: [cap], foreach: datasets, with: {keep: "prompt_chars > 0"}}
`
	p, store := enginetest.Open(t, t.TempDir(), spec)
	enginetest.Run(t, p, store, enginetest.Stage(t, p, "cap", ""))
	for _, run := range []string{"first", "after a stop before any commit"} {
		var log bytes.Buffer
		results, err := p.Run(context.Background(), store, engine.RunOptions{Nodes: enginetest.Stage(t, p, "filter", ""), Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(log.Bytes(), []byte("filter[d]: started, 300 records\n")) {
			t.Errorf("%s run: no start line with the 300 records of the input to do:\n%s", run, log.String())
		}
		for _, r := range results {
			if r.Node.ID == "filter[d]" && r.Processed != 300 {
				t.Errorf("%s run: processed %d records; want 300", run, r.Processed)
			}
		}
		// As a run killed before the pass's first commit leaves it: the
		// instance saved as running, no outcome.
		in, err := store.GetInstance("filter[d]")
		if err != nil || in == nil {
			t.Fatalf("filter's instance: %v, %v", in, err)
		}
		if err := store.Reset([]string{"filter[d]"}); err != nil {
			t.Fatal(err)
		}
		in.Status = state.StatusRunning
		if err := store.PutInstance(in); err != nil {
			t.Fatal(err)
		}
	}
}
