package main

import (
	"os"
	"strings"
	"testing"
)

// TestCLI_StatusAccountsForEveryRecord: after a run with ready-made filter
// rules and a weighted merge, every instance's records in are its records
// out, dropped by reason, duplicates, skipped and failed, and the filter's
// drops are counted by rule name.
func TestCLI_StatusAccountsForEveryRecord(t *testing.T) {
	spec := quickSpec(t)
	src, _ := os.ReadFile(spec)
	edited := strings.Replace(string(src), `with: {keep: "finish_reason in ['stop', 'tool_calls'] && completion_tokens >= 16"}`,
		`with: {rules: {truncated: true, empty_answer: true, think_markers: true, min_completion_tokens: 16, max_repeat_ngram_ratio: 0.5}}`, 1)
	edited = strings.Replace(edited, "max_tokens: 2048", "max_tokens: 400", 1)
	edited = strings.Replace(edited, "shuffle_seed: 7}", "shuffle_seed: 7, weights: {tools: 2}}", 1)
	if edited == string(src) {
		t.Fatal("the quickstart changed shape; update this test's edits")
	}
	os.WriteFile(spec, []byte(edited), 0o644)
	if code, _, errOut := eaglet("run", spec); code != 0 {
		t.Fatalf("run: %s", errOut)
	}
	rows, _ := statusOf(t, spec)
	byID := map[string]instanceStatus{}
	for _, r := range rows {
		byID[r.Instance] = r
		out := r.Done - r.Copies + r.Dropped + r.Duplicates + r.Skipped + r.Failed + r.Pending
		if r.In != out || r.In == 0 || r.Pending != 0 {
			t.Errorf("%s: in %d; done %d - copies %d + dropped %d + duplicates %d + skipped %d + failed %d + pending %d = %d",
				r.Instance, r.In, r.Done, r.Copies, r.Dropped, r.Duplicates, r.Skipped, r.Failed, r.Pending, out)
		}
	}
	rules := map[string]bool{"truncated": true, "empty_answer": true, "think_markers": true, "min_completion_tokens": true, "max_repeat_ngram_ratio": true}
	truncated := 0
	for _, ds := range []string{"chat", "code", "tools"} {
		f := byID["filter["+ds+"]"]
		for reason, n := range f.Reasons {
			rule, ok := strings.CutPrefix(reason, "dropped: ")
			if !ok || !rules[rule] {
				t.Errorf("filter[%s] counts %d under %q; want rule names only", ds, n, reason)
			}
		}
		truncated += f.Reasons["dropped: truncated"]
		if f.In != byID["generate["+ds+"]"].Done {
			t.Errorf("filter[%s] received %d records; generate passed on %d", ds, f.In, byID["generate["+ds+"]"].Done)
		}
	}
	if truncated == 0 {
		t.Error("no answer was dropped as truncated at max_tokens 400")
	}
	if m := byID["merge"]; m.Copies != byID["filter[tools]"].Done {
		t.Errorf("merge made %d extra copies; want one per tools record (%d)", m.Copies, byID["filter[tools]"].Done)
	}
}
