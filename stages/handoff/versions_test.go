package handoff_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
)

// versionSpec answers the test conversations with the in-process sim and
// hands them off through a cap and a trainer window.
func versionSpec(tokDir string, maxSamples, maxLength int, overflow string) string {
	return fmt.Sprintf(`version: 1
name: versions
state: state.db
datasets: {d: {source: convos.jsonl, format: messages}}
endpoints: {sim: {api: sim, options: {seed: 2, mean_tokens: 60}}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: %d, seed: 1}}
  - {name: generate, uses: generate, needs: [cap], foreach: datasets, with: {max_tokens: 300}}
  - {name: handoff, uses: handoff, needs: [generate], with: {out: out, shards: 2, tokenizer: %q, max_length: %d, on_overflow: %s}}
`, maxSamples, tokDir, maxLength, overflow)
}

func current(t *testing.T, dir string) string {
	t.Helper()
	v, err := os.Readlink(filepath.Join(dir, "out", "current"))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func manifest(t *testing.T, dir, version string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "out", version, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestHandoff_Versions: a changed input is a new version beside the old,
// which stays byte for byte; an input set back finds its version again;
// nothing is rewritten in place under a trainer's cache.
func TestHandoff_Versions(t *testing.T) {
	tokDir, _ := qwen3(t)
	dir := workdir(t)
	enginetest.OpenAndRun(t, dir, versionSpec(tokDir, 6, 0, "drop"))
	first := current(t, dir)
	shard := filepath.Join(dir, "out", first, "data", "shard-00000-of-00002.jsonl")
	before, err := os.ReadFile(shard)
	if err != nil {
		t.Fatal(err)
	}
	stat, _ := os.Stat(shard)

	enginetest.OpenAndRun(t, dir, versionSpec(tokDir, 4, 0, "drop"))
	second := current(t, dir)
	if second == first {
		t.Fatalf("capping 6 records to 4 kept version %s; want a new one", first)
	}
	if after, _ := os.ReadFile(shard); string(after) != string(before) {
		t.Errorf("the old version's shard changed when a new version was written")
	}
	if m := manifest(t, dir, second); m["rows"].(float64) != 4 {
		t.Errorf("new version has %v rows; want 4", m["rows"])
	}

	enginetest.OpenAndRun(t, dir, versionSpec(tokDir, 6, 0, "drop"))
	if again := current(t, dir); again != first {
		t.Errorf("setting the cap back made version %s; want %s found again", again, first)
	}
	if st, _ := os.Stat(shard); !st.ModTime().Equal(stat.ModTime()) {
		t.Errorf("the version found again was rewritten")
	}
	// A run killed while it wrote a version left its shards in a
	// temporary directory; the next write removes them.
	killed := filepath.Join(dir, "out", ".tmp-123456789")
	if err := os.MkdirAll(filepath.Join(killed, "data"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(killed, "data", "shard-00000-of-00002.jsonl"), []byte("{\"input_ids\": [1,\n"), 0o644)
	enginetest.OpenAndRun(t, dir, versionSpec(tokDir, 5, 0, "drop"))
	entries, _ := os.ReadDir(filepath.Join(dir, "out"))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Errorf("left a temporary directory %s", e.Name())
		}
	}
}

// TestHandoff_MaxLength drops or clips rows beyond the trainer's window and
// counts them; plan shows the records lost before anything is written.
func TestHandoff_MaxLength(t *testing.T) {
	tokDir, _ := qwen3(t)
	for _, tc := range []struct {
		overflow string
		rows     float64
	}{{"drop", -1}, {"clip", -2}} {
		t.Run(tc.overflow, func(t *testing.T) {
			dir := workdir(t)
			enginetest.OpenAndRun(t, dir, versionSpec(tokDir, 6, 0, tc.overflow))
			full := manifest(t, dir, current(t, dir))
			// A window just under the median row: some rows fit, some not.
			var lengths, contexts []int
			for _, r := range readSpeculators(t, filepath.Join(dir, "out", "current")) {
				lengths = append(lengths, len(r.InputIDs))
				contexts = append(contexts, slices.Index(r.LossMask, 1))
			}
			window := median(lengths) - 1
			fit, open := 0, 0
			for i, n := range lengths {
				if n <= window {
					fit++
				}
				if contexts[i] < window {
					open++
				}
			}
			p, store := enginetest.Open(t, dir, versionSpec(tokDir, 6, window, tc.overflow))
			for _, st := range p.Plan(store, engine.Selection{}) {
				if st.Node.ID == "handoff" && tc.overflow == "drop" && st.Estimate.Records != fit {
					t.Errorf("plan: handoff keeps %d records under max_length %d; want %d", st.Estimate.Records, window, fit)
				}
			}
			enginetest.Run(t, p, store, nil)
			m := manifest(t, dir, current(t, dir))
			want := float64(fit)
			if tc.rows == -2 {
				want = float64(open) // clipped rows keep what of the answer fits
			}
			if m["rows"].(float64) != want {
				t.Errorf("%d of %v rows fit in %d tokens; on_overflow %s wrote %v rows, want %v", fit, full["rows"], window, tc.overflow, m["rows"], want)
			}
			ds := m["datasets"].(map[string]any)["d"].(map[string]any)
			if tc.overflow == "drop" {
				dropped, _ := ds["dropped"].(map[string]any)
				if n := dropped[fmt.Sprintf("over max_length (%d)", window)]; n != float64(6-fit) {
					t.Errorf("dropped %v over max_length; want %d (%v)", n, 6-fit, ds)
				}
			}
			if tc.overflow == "clip" {
				for _, r := range readSpeculators(t, filepath.Join(dir, "out", "current")) {
					if len(r.InputIDs) > window {
						t.Fatalf("clip left a row of %d tokens in a window of %d", len(r.InputIDs), window)
					}
				}
			}
		})
	}
}

func median(xs []int) int {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestHandoff_SamplingIsPartOfTheRows: rows say how they were generated,
// so a changed temperature rewrites them even when the answers come back
// the same (the in-process sim ignores temperature, as greedy decoding or
// a deterministic server would), and plan says why.
func TestHandoff_SamplingIsPartOfTheRows(t *testing.T) {
	tokDir, _ := qwen3(t)
	dir := workdir(t)
	spec := func(temperature float64) string {
		return strings.Replace(versionSpec(tokDir, 6, 0, "drop"), "with: {max_tokens: 300}",
			fmt.Sprintf("with: {max_tokens: 300, temperature: %v}", temperature), 1)
	}
	temperatures := func() []float64 {
		var out []float64
		for _, r := range readSpeculators(t, filepath.Join(dir, "out", current(t, dir))) {
			out = append(out, r.Metadata.Sampling["temperature"].(float64))
		}
		return out
	}
	enginetest.OpenAndRun(t, dir, spec(0.6))
	first := current(t, dir)
	p, store := enginetest.Open(t, dir, spec(0.9))
	for _, st := range p.Plan(store, engine.Selection{}) {
		if st.Node.ID == "handoff" && !strings.HasPrefix(st.Words(), `will rerun: sampling {"temperature":0.6} -> {"temperature":0.9} (`) {
			t.Errorf("plan: handoff %q; want it to rerun for the sampling", st.Words())
		}
	}
	enginetest.Run(t, p, store, nil)
	if current(t, dir) == first || !slices.Equal(temperatures(), []float64{0.9, 0.9, 0.9, 0.9, 0.9, 0.9}) {
		t.Errorf("after temperature 0.6 -> 0.9: version %s (was %s), rows' temperatures %v; want a new version at 0.9", current(t, dir), first, temperatures())
	}
	// The manifest names the tokenizer by its files' hash alone, the same
	// in both versions: the sampling is the generation's, said apart.
	files := func(version string) string {
		tok, _ := manifest(t, dir, version)["tokenizer"].(map[string]any)
		sha, _ := tok["files_sha256"].(string)
		return sha
	}
	if a, b := files(first), files(current(t, dir)); a != b || !regexp.MustCompile(`^[0-9a-f]{16,64}$`).MatchString(a) {
		t.Errorf("manifest tokenizer files_sha256: %q then %q; want one hex hash of the tokenizer's files", a, b)
	}
}
