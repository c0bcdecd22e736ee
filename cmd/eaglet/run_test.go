package main

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/specs"
)

func TestSummarize(t *testing.T) {
	results := func(outcomes ...engine.Outcome) []*engine.Result {
		var rs []*engine.Result
		for _, o := range outcomes {
			rs = append(rs, &engine.Result{Outcome: o})
		}
		return rs
	}
	ran, upToDate := engine.Ran, engine.UpToDate
	interrupted, failed, blocked := engine.Interrupted, engine.Errored, engine.Blocked
	tests := []struct {
		name    string
		results []*engine.Result
		want    string
	}{
		{"one of each", results(ran, upToDate), "1 instance ran, 1 was up to date\n"},
		{"several", results(ran, ran, upToDate, upToDate), "2 instances ran, 2 were up to date\n"},
		{"none up to date", results(ran), "1 instance ran, 0 were up to date\n"},
		{"one up to date", results(upToDate), "everything is up to date (1 instance); nothing to do\n"},
		{"all up to date", results(upToDate, upToDate), "everything is up to date (2 instances); nothing to do\n"},
		{"stopped by Ctrl-C", results(interrupted, interrupted, blocked, upToDate),
			"0 instances ran, 2 interrupted, 1 blocked, 1 was up to date\n"},
		{"one failed", results(ran, failed, blocked, blocked), "1 instance ran, 1 failed, 2 blocked, 0 were up to date\n"},
	}
	for _, tt := range tests {
		var b bytes.Buffer
		summarize(&b, tt.results)
		if b.String() != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, b.String(), tt.want)
		}
	}
}

// TestPrintStatus_StaleFiles: the files of an instance whose input changed
// since are those of its last pass; after a run stopped before it, the
// summary must not say they were written.
func TestPrintStatus_StaleFiles(t *testing.T) {
	p := &engine.Pipeline{Spec: &specs.Spec{}}
	rows := []instanceStatus{
		{Status: &engine.Status{Instance: "merge", State: engine.Stale, Output: "train.jsonl", MoreOutputs: []string{"eval.jsonl"}}},
		{Status: &engine.Status{Instance: "handoff", State: engine.Done, Output: "handoff/v-1/manifest.json"}},
	}
	var b bytes.Buffer
	printStatus(&b, p, rows)
	for _, want := range []string{
		"merge:\n    holds train.jsonl (from before its input changed; run again)\n    holds eval.jsonl (from before its input changed; run again)\n",
		"handoff:\n    wrote handoff/v-1/manifest.json\n",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("status lacks %q:\n%s", want, b.String())
		}
	}
}

// TestPrintSummary_NotWritten: an instance that would not write its file
// over failed records is left to do with what to do about it, told apart
// from one blocked by an unfinished need by its error's type, not its text.
func TestPrintSummary_NotWritten(t *testing.T) {
	merge, handoff := &engine.Node{ID: "merge"}, &engine.Node{ID: "handoff"}
	partial := &engine.PartialInputError{Failed: []engine.FailedRecords{{Instance: "generate[chat]", N: 20}}}
	unfinished := &engine.UnfinishedError{Needs: []string{"merge"}}
	results := []*engine.Result{
		{Node: merge, Outcome: engine.Blocked, Err: partial},
		{Node: handoff, Outcome: engine.Blocked, Err: unfinished},
	}
	rows := []instanceStatus{
		{Status: &engine.Status{Instance: "merge", State: engine.NotRun}},
		{Status: &engine.Status{Instance: "handoff", State: engine.NotRun}},
	}
	var b bytes.Buffer
	printSummary(&b, 0, results, rows, "spec.yaml")
	want := "summary: 0s wall time\n  left to do:\n" +
		"    merge: not written: generate[chat] has 20 failed records; run again to retry them, or pass --allow-partial to write what there is\n" +
		"    1 instance not up to date (handoff not run); `eaglet run spec.yaml` continues\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}

// TestPrintSummary_Failed: an instance that failed is left to do even when
// its state could not be read back (a damaged store gives no rows): the
// summary never says nothing is left beside a FAILED stage.
func TestPrintSummary_Failed(t *testing.T) {
	gen := &engine.Node{ID: "generate[code]"}
	results := []*engine.Result{{Node: gen, Outcome: engine.Errored, Err: errors.New("database disk image is malformed")}}
	var b bytes.Buffer
	printSummary(&b, 0, results, nil, "spec.yaml")
	want := "summary: 0s wall time\n  left to do:\n" +
		"    generate[code] failed (the error above says why); `eaglet run spec.yaml` tries it again\n"
	if b.String() != want {
		t.Errorf("got\n%s\nwant\n%s", b.String(), want)
	}
}
