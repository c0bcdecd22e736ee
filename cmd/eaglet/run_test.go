package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/specs"
)

func TestSummarize(t *testing.T) {
	results := func(actions ...string) []*engine.Result {
		var rs []*engine.Result
		for _, a := range actions {
			rs = append(rs, &engine.Result{Action: a})
		}
		return rs
	}
	tests := []struct {
		name    string
		results []*engine.Result
		want    string
	}{
		{"one of each", results("ran", "up to date"), "1 instance ran, 1 was up to date\n"},
		{"several", results("ran", "ran", "up to date", "up to date"), "2 instances ran, 2 were up to date\n"},
		{"none up to date", results("ran"), "1 instance ran, 0 were up to date\n"},
		{"one up to date", results("up to date"), "everything is up to date (1 instance); nothing to do\n"},
		{"all up to date", results("up to date", "up to date"), "everything is up to date (2 instances); nothing to do\n"},
		{"stopped by Ctrl-C", results("interrupted", "interrupted", "blocked", "up to date"),
			"0 instances ran, 2 interrupted, 1 blocked, 1 was up to date\n"},
		{"one failed", results("ran", "failed", "blocked", "blocked"), "1 instance ran, 1 failed, 2 blocked, 0 were up to date\n"},
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
