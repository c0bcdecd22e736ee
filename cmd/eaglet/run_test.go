package main

import (
	"bytes"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
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
	}
	for _, tt := range tests {
		var b bytes.Buffer
		summarize(&b, tt.results)
		if b.String() != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, b.String(), tt.want)
		}
	}
}
