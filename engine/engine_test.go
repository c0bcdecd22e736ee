package engine_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	_ "github.com/eaglet-dev/eaglet/stages/all"
	"github.com/eaglet-dev/eaglet/state"
)

// specTemplate is a small multi-dataset pipeline on the instant simulator;
// tests replace its {{...}} settings to play spec edits.
const specTemplate = `version: 1
name: memo
state: state.db
vars: {max_samples: {{cap}}}
datasets:
  chat: {source: ` + "{{data}}" + `/chat.jsonl, format: messages, est_completion_tokens: 300}
  code: {source: ` + "{{data}}" + `/code.jsonl, format: sharegpt}
endpoints:
  sim: {api: sim, concurrency: 8, options: {seed: 3, mean_tokens: 120}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: "vars.max_samples", seed: 1}}
  - {name: generate, uses: generate, needs: [cap], foreach: datasets, concurrency: {{conc}}, with: {endpoint: sim, max_tokens: 400}}
  - {name: filter, uses: filter, needs: [generate], foreach: datasets, with: {keep: "{{keep}}"}}
  - {name: merge, uses: merge, needs: [filter], with: {out: train.jsonl, shuffle_seed: 5}}
`

func writeSpec(t *testing.T, dir string, settings map[string]string) string {
	t.Helper()
	data, err := filepath.Abs("../specs/examples/data")
	if err != nil {
		t.Fatal(err)
	}
	body := strings.ReplaceAll(specTemplate, "{{data}}", data)
	defaults := map[string]string{"cap": "50", "conc": "4", "keep": "completion_tokens >= 16"}
	for k, v := range defaults {
		if s, ok := settings[k]; ok {
			v = s
		}
		body = strings.ReplaceAll(body, "{{"+k+"}}", v)
	}
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// openSpec loads the spec at path and opens its store, closed with the test.
func openSpec(t *testing.T, path string) (*engine.Pipeline, *state.Store) {
	t.Helper()
	p, err := engine.Load(path, enginetest.NoEnv)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	store, err := state.Open(p.Spec.State)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return p, store
}

func runSpec(t *testing.T, path string) map[string]*engine.Result {
	t.Helper()
	p, store := openSpec(t, path)
	defer store.Close()
	return enginetest.Run(t, p, store, nil)
}

// processed sums the records each stage processed in a run.
func processed(results map[string]*engine.Result) map[string]int {
	out := map[string]int{}
	for id, r := range results {
		stage := id
		if i := strings.IndexByte(id, '['); i >= 0 {
			stage = id[:i]
		}
		out[stage] += r.Processed
	}
	return out
}

func TestRun_Memoization(t *testing.T) {
	tests := []struct {
		name string
		edit map[string]string
		// want is the number of records each stage processes after the edit.
		want map[string]int
	}{
		{"nothing changed", nil, map[string]int{"generate": 0, "filter": 0, "merge": 0}},
		{"concurrency changed", map[string]string{"conc": "16"}, map[string]int{"generate": 0, "filter": 0, "merge": 0}},
		// chat has 140 records and code 110: raising the cap from 50 to 80
		// adds 30 per dataset and keeps the first 50.
		{"cap raised", map[string]string{"cap": "80"}, map[string]int{"generate": 60, "filter": 60}},
		{"filter changed", map[string]string{"keep": "completion_tokens >= 32"}, map[string]int{"generate": 0, "filter": 100}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			first := runSpec(t, writeSpec(t, dir, nil))
			if got := processed(first); got["generate"] != 100 || got["filter"] != 100 {
				t.Fatalf("first run processed %v; want 100 generated and filtered", got)
			}
			before, err := os.ReadFile(filepath.Join(dir, "train.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			got := processed(runSpec(t, writeSpec(t, dir, tt.edit)))
			for stage, want := range tt.want {
				if got[stage] != want {
					t.Errorf("after edit, %s processed %d records; want %d (all: %v)", stage, got[stage], want, got)
				}
			}
			if tt.edit == nil || tt.edit["conc"] != "" {
				after, _ := os.ReadFile(filepath.Join(dir, "train.jsonl"))
				if !bytes.Equal(before, after) {
					t.Error("output changed although the spec did not change what is produced")
				}
			}
		})
	}
}

func TestRun_LoweredCapKeepsWork(t *testing.T) {
	dir := t.TempDir()
	runSpec(t, writeSpec(t, dir, map[string]string{"cap": "80"}))
	if got := processed(runSpec(t, writeSpec(t, dir, map[string]string{"cap": "50"}))); got["generate"] != 0 {
		t.Errorf("lowering the cap generated %d records; want 0", got["generate"])
	}
	// Raising it again brings back the set-aside answers without generating.
	if got := processed(runSpec(t, writeSpec(t, dir, map[string]string{"cap": "80"}))); got["generate"] != 0 {
		t.Errorf("raising the cap back generated %d records; want 0 (answers were kept)", got["generate"])
	}
	lines := bytes.Count(mustRead(t, filepath.Join(dir, "train.jsonl")), []byte("\n"))
	if lines < 150 || lines > 160 {
		t.Errorf("train.jsonl has %d lines; want the 160 capped records less a few filtered", lines)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPlan_SaysWhatChanged(t *testing.T) {
	dir := t.TempDir()
	runSpec(t, writeSpec(t, dir, nil))
	p, store := openSpec(t, writeSpec(t, dir, map[string]string{"cap": "80"}))
	actions := map[string]string{}
	for _, s := range p.Plan(store, engine.Selection{}) {
		actions[s.Node.ID] = s.Words()
	}
	want := map[string]string{
		"load[chat]": "up to date",
		"cap[chat]":  "will rerun: max_samples 50 -> 80",
		// The cap is worked out, not guessed: exactly 30 records are new.
		"generate[chat]": "will run: 30 of 80 records to do",
	}
	for id, w := range want {
		if actions[id] != w {
			t.Errorf("plan for %s = %q; want %q", id, actions[id], w)
		}
	}
}

// TestRun_LogReadsAsARecord: redirected to a file, the log has a
// timestamped line when each instance starts and when it ends, loads
// included (whose totals are not known when they start).
func TestRun_LogReadsAsARecord(t *testing.T) {
	p, store := openSpec(t, writeSpec(t, t.TempDir(), nil))
	var log bytes.Buffer
	if _, err := p.Run(context.Background(), store, engine.RunOptions{Log: &log}); err != nil {
		t.Fatal(err)
	}
	for _, n := range p.Nodes {
		for _, what := range []string{n.ID + ": started", n.ID + ": finished in "} {
			if !strings.Contains(log.String(), "Z "+what) {
				t.Errorf("log has no timestamped %q line:\n%s", what, log.String())
			}
		}
	}
}

// TestRun_BlockedNamesEveryInput: a merge whose inputs failed names them
// all, so one look says what to fix.
func TestRun_BlockedNamesEveryInput(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"a.jsonl", "b.jsonl"} {
		os.WriteFile(filepath.Join(dir, f), []byte("{not json}\n"), 0o644)
	}
	p, store := enginetest.Open(t, dir, `version: 1
name: blocked
state: state.db
datasets:
  a: {source: a.jsonl, format: messages}
  b: {source: b.jsonl, format: messages}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: merge, uses: merge, needs: [load], with: {out: out.jsonl}}
`)
	results, _ := p.Run(context.Background(), store, engine.RunOptions{Log: &bytes.Buffer{}})
	found := false
	for _, r := range results {
		if r.Node.ID != "merge" {
			continue
		}
		found = true
		if r.Outcome != engine.Blocked || r.Err == nil || r.Err.Error() != "load[a], load[b] did not finish" {
			t.Errorf("merge: %s, %v; want blocked by load[a], load[b]", r.Outcome, r.Err)
		}
	}
	if !found {
		t.Error("no result for merge")
	}
}
