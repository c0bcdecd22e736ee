package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/outfile"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// TestBatchWhy: a batch instance's decision names what happened to it.
// A run killed before its output was in, or while it finished (a
// handoff's launches), stopped early; only a recorded input that differs
// from today's is a changed input.
func TestBatchWhy(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "train.jsonl")
	if err := os.WriteFile(out, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stamp, err := outfile.Stamp(out)
	if err != nil {
		t.Fatal(err)
	}
	gone := filepath.Join(dir, "gone.jsonl")
	// The spec lives in dir; a copy of the project elsewhere wrote moved.
	spec := &specs.Spec{Path: filepath.Join(dir, "spec.yaml")}
	pr := &prepared{fp: "fp1", config: `{"k":1}`, inst: &stages.Instance{Spec: spec}}
	elsewhere := t.TempDir()
	moved := filepath.Join(elsewhere, "train.jsonl")
	if err := os.WriteFile(moved, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inst := func(status, digest string, output, hash string) *state.Instance {
		return &state.Instance{Status: status, Fingerprint: "fp1", InputDigest: digest,
			Stats: state.Stats{Config: []byte(`{"k":1}`), Output: output, OutputHash: hash}}
	}
	tests := []struct {
		name string
		prev *state.Instance
		want string
	}{
		{"never ran", nil, "will run: never ran"},
		{"done, same input, output intact", inst(state.StatusDone, "in1", out, stamp), upToDate},
		{"done, output stored relative to the spec", inst(state.StatusDone, "in1", "train.jsonl", stamp), upToDate},
		{"done, output of the project's old place", inst(state.StatusDone, "in1", moved, stamp), "will rerun: " + moved + " is missing or was changed"},
		{"done, other input", inst(state.StatusDone, "in0", out, stamp), "will rerun: input changed"},
		{"done, output deleted", inst(state.StatusDone, "in1", gone, stamp), "will rerun: " + gone + " is missing or was changed"},
		{"killed while it read its input", inst(state.StatusRunning, "", "", ""), "will finish: last run stopped early"},
		{"killed while it finished", inst(state.StatusRunning, "in1", "", ""), "will finish: last run stopped early"},
		{"killed, and its input changed since", inst(state.StatusRunning, "in0", "", ""), "will rerun: input changed"},
		{"failed", inst(state.StatusFailed, "", "", ""), "will rerun: last run failed"},
		{"failed, and its input changed since", inst(state.StatusFailed, "in0", "", ""), "will rerun: input changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := batchWhy(tt.prev, pr, false, "in1"); got != tt.want {
				t.Errorf("batchWhy = %q; want %q", got, tt.want)
			}
		})
	}
}
