package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStatus_DedupeCountsAndExamples runs a dedupe with flagging
// decontamination over the dedupe stage's test datasets and reads what
// status shows of it: drops per dataset by reason, flagged prompts, and in
// --json examples naming each record's survivor or benchmark line.
func TestStatus_DedupeCountsAndExamples(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"chat.jsonl", "code.jsonl", "bench.jsonl"} {
		b, err := os.ReadFile(filepath.Join("../../stages/dedupe/testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	spec := filepath.Join(dir, "spec.yaml")
	err := os.WriteFile(spec, []byte(`version: 1
name: dd
state: state.db
datasets:
  chat: {source: chat.jsonl, format: messages}
  code: {source: code.jsonl, format: messages}
endpoints:
  e: {api: sim, options: {mean_tokens: 20}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: dedupe, uses: dedupe, needs: [load], with: {decontaminate: {benchmarks: [bench.jsonl], action: flag}}}
  - {name: generate, uses: generate, needs: [dedupe], foreach: datasets}
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if code, out, errs := eaglet("run", "--progress", "lines", spec); code != exitOK {
		t.Fatalf("run: exit %d\n%s%s", code, out, errs)
	}
	_, out, _ := eaglet("status", spec)
	for _, want := range []string{
		"3 × dropped: code: exact duplicate of chat",
		"2 × dropped: chat: exact duplicate of chat",
		"1 × dropped: code: near duplicate of chat",
		"flagged: 1 × chat: contaminated (bench.jsonl)",
		"flagged: 1 × code: contaminated (bench.jsonl)",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("status lacks %q:\n%s", want, out)
		}
	}
	rows, _ := statusOf(t, spec)
	for _, r := range rows {
		// Every record in is accounted for: a per-dataset generate
		// receives its own dataset's survivors, dedupe every copy.
		if r.In != r.Done+r.Dropped || r.Pending != 0 {
			t.Errorf("%s: %d in, %d done, %d dropped, %d pending", r.Instance, r.In, r.Done, r.Dropped, r.Pending)
		}
		if r.Instance != "dedupe" {
			continue
		}
		kinds := map[string]bool{}
		for _, ex := range r.Examples {
			kind := ex.Reason[strings.Index(ex.Reason, ": ")+2:]
			kinds[strings.Fields(kind)[0]] = true
			if ex.Record == "" || ex.Match == "" {
				t.Errorf("example without its record or match: %+v", ex)
			}
		}
		if !kinds["exact"] || !kinds["near"] || !kinds["contaminated"] {
			t.Errorf("examples of %v, want exact, near and contaminated: %+v", kinds, r.Examples)
		}
		if r.Dropped != 6 || r.Flagged["chat: contaminated (bench.jsonl)"] != 1 {
			t.Errorf("dedupe: %d dropped, flagged %v; want 6 dropped, 1 chat prompt flagged", r.Dropped, r.Flagged)
		}
	}
}
