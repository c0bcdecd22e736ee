package generate_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
)

// TestBudget_MultiTurn: a record with two questions (MT-Bench) is one
// admission but two answers, so it can run past max_tokens; a stage budget
// shared with a one-question dataset must count both answers, the second
// while it streams, and stay under its limit.
func TestBudget_MultiTurn(t *testing.T) {
	dir := t.TempDir()
	var b bytes.Buffer
	for i := range 400 {
		fmt.Fprintf(&b, `{"messages":[{"role":"user","content":"First question %d."},{"role":"user","content":"Follow-up %d: go deeper."}]}`+"\n", i, i)
	}
	if err := os.WriteFile(filepath.Join(dir, "mt.jsonl"), b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	writePrompts(t, filepath.Join(dir, "one.jsonl"), 400)
	p, store := enginetest.Open(t, dir, `version: 1
name: mt
state: state.db
datasets:
  one: {source: one.jsonl, est_completion_tokens: 300}
  mt: {source: mt.jsonl, est_completion_tokens: 300}
endpoints:
  sim: {api: sim, concurrency: 60, options: {seed: 9, mean_tokens: 300, speed: 3000}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 512, budget: {completion_tokens: 60_000, scope: stage}}}
`)
	enginetest.Run(t, p, store, nil)
	_, c := spent(t, store, "generate[mt]", "generate[one]")
	over := float64(c-60_000) / 60_000
	t.Logf("spent %d completion tokens (%+.2f%%)", c, 100*over)
	if over > 0.01 || over < -0.10 {
		t.Errorf("spent %d completion tokens on a 60,000 budget (%+.1f%%); want -10%% to +1%%", c, 100*over)
	}
}
