package endpoint

import (
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/stages/serving/managed"
	"github.com/eaglet-dev/eaglet/state"
)

// TestReplicas reads, of the figures several instances kept of one
// endpoint, the latest; since leaves out what earlier runs kept.
func TestReplicas(t *testing.T) {
	store, err := state.Open(filepath.Join(t.TempDir(), "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	t0 := time.Date(2026, 12, 4, 3, 0, 0, 0, time.UTC)
	keep := func(instance, endpoint, st string, at time.Time) {
		b, _ := json.Marshal(keptReplicas{Figures: managed.Figures{Endpoint: endpoint, Replicas: []managed.ReplicaFigures{{State: st}}}, At: at})
		if err := store.Checkpoints(instance).PutCheckpoint(replicasKey+endpoint, b); err != nil {
			t.Fatal(err)
		}
	}
	keep("generate[a]", "target", managed.ReplicaUp, t0)
	keep("generate[b]", "target", managed.ReplicaStopped, t0.Add(time.Minute))
	keep("judge[a]", "judge", managed.ReplicaStopped, t0.Add(-time.Hour))
	cps := []stages.Checkpoints{store.Checkpoints("generate[a]"), store.Checkpoints("generate[b]"), store.Checkpoints("judge[a]")}
	for _, tc := range []struct {
		name  string
		since time.Time
		want  map[string]string
	}{
		{"any run", time.Time{}, map[string]string{"judge": managed.ReplicaStopped, "target": managed.ReplicaStopped}},
		{"this run", t0, map[string]string{"target": managed.ReplicaStopped}},
		{"none since", t0.Add(time.Hour), map[string]string{}},
	} {
		figs, err := Replicas(cps, tc.since)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]string{}
		for _, f := range figs {
			got[f.Endpoint] = f.Replicas[0].State
		}
		if len(got) != len(tc.want) || (len(figs) == 2 && figs[0].Endpoint != "judge") {
			t.Errorf("%s: %+v, want %v in the order of names", tc.name, figs, tc.want)
		}
		for e, st := range tc.want {
			if got[e] != st {
				t.Errorf("%s: %s is %q, want %q", tc.name, e, got[e], st)
			}
		}
	}
}
