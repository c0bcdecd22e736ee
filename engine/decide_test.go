package engine

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/outfile"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// TestDecideBatch: a batch instance's decision names what happened to it.
// A run killed before its output was in, or while it finished (a
// handoff's launches), stopped early; only a recorded input that differs
// from today's is a changed input.
func TestDecideBatch(t *testing.T) {
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
		name  string
		prev  *state.Instance
		want  Decision
		words string
	}{
		{"never ran", nil, Decision{Action: Run, Reason: NeverRan}, "will run: never ran"},
		{"done, same input, output intact", inst(state.StatusDone, "in1", out, stamp), Decision{Action: Skip}, "up to date"},
		{"done, output stored relative to the spec", inst(state.StatusDone, "in1", "train.jsonl", stamp), Decision{Action: Skip}, "up to date"},
		{"done, output of the project's old place", inst(state.StatusDone, "in1", moved, stamp),
			Decision{Action: Rerun, Reason: OutputChanged, Output: moved}, "will rerun: " + moved + " is missing or was changed"},
		{"done, other input", inst(state.StatusDone, "in0", out, stamp), Decision{Action: Rerun, Reason: InputChanged}, "will rerun: input changed"},
		{"done, output deleted", inst(state.StatusDone, "in1", gone, stamp),
			Decision{Action: Rerun, Reason: OutputChanged, Output: gone}, "will rerun: " + gone + " is missing or was changed"},
		{"killed while it read its input", inst(state.StatusRunning, "", "", ""), Decision{Action: Finish, Reason: StoppedEarly}, "will finish: last run stopped early"},
		{"killed while it finished", inst(state.StatusRunning, "in1", "", ""), Decision{Action: Finish, Reason: StoppedEarly}, "will finish: last run stopped early"},
		{"killed, and its input changed since", inst(state.StatusRunning, "in0", "", ""), Decision{Action: Rerun, Reason: InputChanged}, "will rerun: input changed"},
		{"failed", inst(state.StatusFailed, "", "", ""), Decision{Action: Rerun, Reason: LastRunFailed}, "will rerun: last run failed"},
		{"failed, and its input changed since", inst(state.StatusFailed, "in0", "", ""), Decision{Action: Rerun, Reason: InputChanged}, "will rerun: input changed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decideBatch(tt.prev, pr, false, "in1")
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decideBatch = %+v; want %+v", got, tt.want)
			}
			if got.String() != tt.words {
				t.Errorf("decideBatch says %q; want %q", got, tt.words)
			}
		})
	}
}

// TestDecideMapper: an item instance runs for its configuration first,
// then for the records it has left; one stopped with none left finishes.
func TestDecideMapper(t *testing.T) {
	pr := &prepared{fp: "fp2", config: `{"max_samples":8000,"temperature":0.7}`}
	stored := func(status, fp string) *state.Instance {
		return &state.Instance{Status: status, Fingerprint: fp, Stats: state.Stats{Config: []byte(`{"max_samples":7000,"temperature":0.7}`)}}
	}
	tests := []struct {
		name           string
		prev           *state.Instance
		force          bool
		pending, total int
		want           Decision
	}{
		{"never ran", nil, false, 80, 80, Decision{Action: Run, Reason: NeverRan}},
		{"forced, even if up to date", stored(state.StatusDone, "fp2"), true, 0, 80, Decision{Action: Rerun, Reason: Forced}},
		{"reconfigured", stored(state.StatusDone, "fp1"), false, 0, 80,
			Decision{Action: Rerun, Reason: Reconfigured, Changed: []Change{{Key: "max_samples", Old: "7000", New: "8000"}}}},
		{"records to do", stored(state.StatusDone, "fp2"), false, 30, 80, Decision{Action: Run, Reason: RecordsToDo, Work: &Work{Todo: 30, Total: 80}}},
		{"stopped with nothing left", stored(state.StatusRunning, "fp2"), false, 0, 80, Decision{Action: Finish, Reason: StoppedEarly, Work: &Work{Total: 80}}},
		{"up to date", stored(state.StatusDone, "fp2"), false, 0, 80, Decision{Action: Skip}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := decideMapper(tt.prev, pr, tt.force, tt.pending, tt.total); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("decideMapper = %+v; want %+v", got, tt.want)
			}
		})
	}
}

// TestChanges: the settings that differ, sorted as plan shows them, with
// what changed in a kind's own fingerprint kept together.
func TestChanges(t *testing.T) {
	tests := []struct {
		name     string
		old, cur string
		want     []Change
	}{
		{"one setting", `{"cap":50}`, `{"cap":80}`, []Change{{Key: "cap", Old: "50", New: "80"}}},
		{"set and unset", `{"a":1}`, `{"b":">= 2"}`, []Change{{Key: "a", Old: "1", New: "(unset)"}, {Key: "b", Old: "(unset)", New: `">= 2"`}}},
		{"a kind's fingerprint that names what changed",
			`{"external":"{\"z\":1,\"a\":1}","m":1}`, `{"external":"{\"z\":2,\"a\":2}","m":2}`,
			[]Change{{Key: "a", Old: "1", New: "2"}, {Key: "z", Old: "1", New: "2"}, {Key: "m", Old: "1", New: "2"}}},
		{"a kind's fingerprint that is a hash", `{"external":"h1"}`, `{"external":"h2"}`, []Change{opaque}},
		{"nothing differs", `{"a":1}`, `{"a":1}`, nil},
		{"not comparable", `not json`, `{"a":1}`, nil},
		// A store written before secrets were kept by reference holds the
		// old token in clear: it is not shown.
		{"a secret stored in clear", `{"run":{"argv":["x","hf_old"]}}`, `{"run":{"argv":["x","${HF_TOKEN}"]}}`,
			[]Change{{Key: "run", Old: clearSecret, New: `{"argv":["x","${HF_TOKEN}"]}`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := changes(tt.old, tt.cur); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("changes = %+v; want %+v", got, tt.want)
			}
		})
	}
}
