package filter_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
)

// TestKeep_EachRecordItsOwnFields: a filter evaluates every record against
// its own fields, whatever the records before it held (environments are
// reused between records): records with and without a system prompt,
// interleaved in key order, are kept exactly when theirs is empty.
func TestKeep_EachRecordItsOwnFields(t *testing.T) {
	dir := t.TempDir()
	var rows strings.Builder
	var want []string
	for i := range 40 {
		q := fmt.Sprintf("question %d", i)
		if i%3 == 0 {
			fmt.Fprintf(&rows, `{"messages":[{"role":"system","content":"be brief"},{"role":"user","content":%q}]}`+"\n", q)
			continue
		}
		fmt.Fprintf(&rows, `{"messages":[{"role":"user","content":%q}]}`+"\n", q)
		want = append(want, q)
	}
	os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(rows.String()), 0o644)
	enginetest.OpenAndRun(t, dir, `version: 1
name: env
state: state.db
datasets: {d: {source: d.jsonl}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: f, uses: filter, needs: [load], foreach: datasets, with: {keep: "system == '' && num_messages == 1"}}
  - {name: merge, uses: merge, needs: [f], with: {out: out.jsonl, format: record}}
`)
	b, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		_, after, _ := strings.Cut(line, `"content":"`)
		q, _, _ := strings.Cut(after, `"`)
		got = append(got, q)
	}
	sort.Strings(got)
	sort.Strings(want)
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("kept %q\nwant %q", got, want)
	}
}
