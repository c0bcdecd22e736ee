package merge_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	_ "github.com/eaglet-dev/eaglet/stages/all"
)

// TestMerge_CollapseReportedAndEvalWritten runs load → merge over two
// datasets that share three records: merge counts and logs the collapse
// instead of hiding it, writes the eval split beside train, and rewrites
// it when it is deleted.
func TestMerge_CollapseReportedAndEvalWritten(t *testing.T) {
	dir := t.TempDir()
	var a, b strings.Builder
	for i := range 200 {
		fmt.Fprintf(&a, `{"messages":[{"role":"user","content":"a%d"},{"role":"assistant","content":"x"}]}`+"\n", i)
	}
	for i := range 3 {
		fmt.Fprintf(&b, `{"messages":[{"role":"user","content":"a%d"},{"role":"assistant","content":"x"}]}`+"\n", i)
	}
	for i := range 50 {
		fmt.Fprintf(&b, `{"messages":[{"role":"user","content":"b%d"},{"role":"assistant","content":"y"}]}`+"\n", i)
	}
	os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte(a.String()), 0o644)
	os.WriteFile(filepath.Join(dir, "b.jsonl"), []byte(b.String()), 0o644)
	spec := `version: 1
name: m
state: s.db
datasets: {a: {source: a.jsonl}, b: {source: b.jsonl}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: merge, uses: merge, needs: [load], with: {out: train.jsonl, shuffle_seed: 1, eval: {fraction: 0.1, seed: 7, out: eval.jsonl}}}
`
	p, store := enginetest.Open(t, dir, spec)
	var log bytes.Buffer
	if _, err := p.Run(context.Background(), store, engine.RunOptions{Log: &log}); err != nil {
		t.Fatal(err)
	}
	in, err := store.GetInstance("merge")
	if err != nil {
		t.Fatal(err)
	}
	if n := in.Stats.Dropped["identical to a record of load[a] (from load[b])"]; n != 3 {
		t.Errorf("merge counted %v; want 3 of load[b] identical to load[a]'s", in.Stats.Dropped)
	}
	if !strings.Contains(log.String(), "3 records of load[b] identical to records of load[a], passed on once") {
		t.Errorf("the log does not report the collapse:\n%s", log.String())
	}
	lines := func(name string) int {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return bytes.Count(b, []byte("\n"))
	}
	train, eval := lines("train.jsonl"), lines("eval.jsonl")
	if train+eval != 250 || eval < 10 || eval > 45 {
		t.Errorf("train %d + eval %d lines; want 250 distinct records, about 25 held out", train, eval)
	}
	os.Remove(filepath.Join(dir, "eval.jsonl"))
	res := enginetest.Run(t, p, store, nil)
	if res["merge"].Outcome != engine.Ran || lines("eval.jsonl") != eval {
		t.Errorf("after eval.jsonl was deleted merge %s and wrote %d lines; want it rewritten with %d", res["merge"].Outcome, lines("eval.jsonl"), eval)
	}
}

// TestMerge_EvalOutChecked: eval's out is checked as out is.
func TestMerge_EvalOutChecked(t *testing.T) {
	tests := []struct{ eval, want string }{
		{"{fraction: 0.1, out: train.jsonl}", "spec.yaml:7:99: stage merge: eval.out train.jsonl is also written by stage merge"},
		{"{fraction: 0.1, out: ../eval.jsonl}", "eval.out ../eval.jsonl is outside the spec's directory"},
		{"{fraction: 1.5, out: e.jsonl}", "eval fraction is 1.5; use a share between 0 and 1"},
		{"{fraction: 0.1}", "eval needs `out:`"},
	}
	for _, tt := range tests {
		dir := t.TempDir()
		os.WriteFile(filepath.Join(dir, "a.jsonl"), []byte(`{"messages":[{"role":"user","content":"q"}]}`+"\n"), 0o644)
		spec := "version: 1\nname: m\nstate: s.db\ndatasets: {a: {source: a.jsonl}}\nstages:\n" +
			"  - {name: load, uses: load, foreach: datasets}\n  - {name: merge, uses: merge, needs: [load], with: {out: train.jsonl, eval: " + tt.eval + "}}\n"
		err := enginetest.LoadErr(t, dir, spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("eval %s: error %v; want %q", tt.eval, err, tt.want)
		}
	}
}

// TestMerge_ByKeyKeepsWhatRecordsKeep: with no weight above 1, merge
// decides by key and dataset without reading records; with one (code: 2,
// whose records are copied) it reads them. The chat records a weight of
// 0.5 keeps, the eval split and the shuffled order must be the same
// either way.
func TestMerge_ByKeyKeepsWhatRecordsKeep(t *testing.T) {
	data, err := filepath.Abs("../../specs/examples/data")
	if err != nil {
		t.Fatal(err)
	}
	run := func(codeWeight string) (train, eval []string) {
		dir := t.TempDir()
		enginetest.OpenAndRun(t, dir, `version: 1
name: m
state: s.db
datasets:
  chat: {source: `+data+`/chat.jsonl, format: messages}
  code: {source: `+data+`/code.jsonl, format: sharegpt}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: merge, uses: merge, needs: [load], with: {out: train.jsonl, shuffle_seed: 3, weights: {chat: 0.5, code: `+codeWeight+`},
      eval: {fraction: 0.2, seed: 4, out: eval.jsonl}}}
`)
		read := func(name string) (chat []string) {
			b, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				if strings.Contains(l, `"dataset":"chat"`) {
					chat = append(chat, l)
				}
			}
			return chat
		}
		return read("train.jsonl"), read("eval.jsonl")
	}
	byKeyTrain, byKeyEval := run("1")
	byRecordTrain, byRecordEval := run("2")
	if len(byKeyTrain) < 10 || strings.Join(byKeyTrain, "\n") != strings.Join(byRecordTrain, "\n") {
		t.Errorf("chat's training records by key (%d) differ from those by record (%d)", len(byKeyTrain), len(byRecordTrain))
	}
	if len(byKeyEval) == 0 || strings.Join(byKeyEval, "\n") != strings.Join(byRecordEval, "\n") {
		t.Errorf("chat's eval records by key (%d) differ from those by record (%d)", len(byKeyEval), len(byRecordEval))
	}
}
