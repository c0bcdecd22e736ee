package engine

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	_ "github.com/eaglet-dev/eaglet/stages/all"
)

// TestSettling_WhoWaits: under a budget shared by every dataset, an
// instance's first request waits for the siblings fed without requests;
// not for one behind another generate stage (hours away), nor under a
// budget per dataset or none, nor in a run that leaves the sibling out.
func TestSettling_WhoWaits(t *testing.T) {
	const spec = `version: 1
name: settle
state: state.db
datasets:
  a: {source: a.jsonl, format: messages}
  b: {source: b.jsonl, format: messages}
endpoints:
  target: {api: sim}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: shared, uses: generate, needs: [load], foreach: datasets, with: {endpoint: target, budget: {samples: 10, scope: stage}}}
  - {name: own, uses: generate, needs: [load], foreach: datasets, with: {endpoint: target, budget: {samples: 10}}}
  - {name: later, uses: generate, needs: [own], foreach: datasets, with: {endpoint: target, budget: {samples: 10, scope: stage}}}
`
	dir := t.TempDir()
	for name, body := range map[string]string{"spec.yaml": spec, "a.jsonl": "", "b.jsonl": ""} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, err := Load(filepath.Join(dir, "spec.yaml"), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*Node{}
	for _, n := range p.Nodes {
		byID[n.ID] = n
	}
	waits := func(run []*Node) map[string]string {
		s := newSettling(p, p.Ancestors(run), nil)
		got := map[string]string{}
		for n, peers := range s.peers {
			var ids []string
			for _, p := range peers {
				ids = append(ids, p.ID)
			}
			slices.Sort(ids)
			got[n.ID] = strings.Join(ids, " ")
		}
		return got
	}
	all := waits(p.Nodes)
	want := map[string]string{"shared[a]": "shared[b]", "shared[b]": "shared[a]"}
	if len(all) != len(want) || all["shared[a]"] != want["shared[a]"] || all["shared[b]"] != want["shared[b]"] {
		t.Errorf("whole run: waits %v; want %v", all, want)
	}
	if one := waits([]*Node{byID["shared[a]"]}); len(one) != 0 {
		t.Errorf("a run of shared[a] alone: waits %v; want none (shared[b] does not run)", one)
	}
}
