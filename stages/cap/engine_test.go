package cap_test

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	_ "github.com/eaglet-dev/eaglet/stages/all"
	"github.com/eaglet-dev/eaglet/stages/cap"
	"github.com/eaglet-dev/eaglet/state"
)

// TestCap_OneReadThroughTheEngine: through the engine, cap keeps exactly
// the max_samples records first by rank (after drop_if), says how many it
// dropped and why, and what it stored hashes to what it saved as its
// output digest (worked out as written), so a second run finds it and
// what reads it up to date.
func TestCap_OneReadThroughTheEngine(t *testing.T) {
	tests := []struct {
		name, with string
		n          int
		droppedIf  func(i int) bool
	}{
		{"by key", "{max_samples: 70, seed: 3}", 70, func(int) bool { return false }},
		{"all", "{max_samples: 500, seed: 3}", 200, func(int) bool { return false }},
		{"none", "{max_samples: 0, seed: 3}", 0, func(int) bool { return false }},
		{"drop_if", `{max_samples: 70, seed: 3, drop_if: "prompt_chars > 11"}`, 70, func(i int) bool { return i >= 100 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			var rows strings.Builder
			for i := range 200 {
				fmt.Fprintf(&rows, `{"messages":[{"role":"user","content":"question %d"}]}`+"\n", i)
			}
			os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(rows.String()), 0o644)
			spec := `version: 1
name: c
state: state.db
datasets: {d: {source: d.jsonl}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: ` + tt.with + `}
  - {name: f, uses: filter, needs: [cap], foreach: datasets, with: {keep: "true"}}
`
			p, store, res := enginetest.OpenAndRun(t, dir, spec)
			ctx := context.Background()
			var eligible, kept []string
			err := store.EachOutput(ctx, []string{"load[d]"}, func(r state.Row) error {
				var i int
				if _, err := fmt.Sscanf(string(r.Data[strings.Index(string(r.Data), "question "):]), "question %d", &i); err != nil {
					return err
				}
				if !tt.droppedIf(i) {
					eligible = append(eligible, r.Key)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			slices.SortFunc(eligible, func(a, b string) int { return cmp.Or(cmp.Compare(cap.Rank(3, a), cap.Rank(3, b)), cmp.Compare(a, b)) })
			want := slices.Sorted(slices.Values(eligible[:min(tt.n, len(eligible))]))
			if err := store.EachOutput(ctx, []string{"cap[d]"}, func(r state.Row) error { kept = append(kept, r.Key); return nil }); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(kept, want) {
				t.Errorf("cap kept %d records, want the %d first by rank", len(kept), len(want))
			}
			in, err := store.GetInstance("cap[d]")
			if err != nil {
				t.Fatal(err)
			}
			if got := in.Stats.Dropped["over max_samples"]; got != len(eligible)-len(want) {
				t.Errorf("dropped over max_samples: %d, want %d (stats %v)", got, len(eligible)-len(want), in.Stats.Dropped)
			}
			if got, want := in.Stats.Dropped[`drop_if: prompt_chars > 11`], 200-len(eligible); got != want {
				t.Errorf("dropped by drop_if: %d, want %d", got, want)
			}
			if got := res["cap[d]"].Processed; got != len(want) {
				t.Errorf("cap processed %d, want %d", got, len(want))
			}
			digest, records, err := store.OutputDigest(ctx, "cap[d]")
			if err != nil {
				t.Fatal(err)
			}
			if digest != in.OutputDigest || records != len(want) {
				t.Errorf("saved output digest %s, the stored rows' %s (%d records)", in.OutputDigest, digest, records)
			}
			for id, r := range enginetest.Run(t, p, store, nil) {
				if r.Outcome != engine.UpToDate {
					t.Errorf("second run: %s %s (%s)", id, r.Outcome, r.Decision)
				}
			}
		})
	}
}
