package endpoint

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/stages/serving/managed"
)

// replicasKey prefixes the checkpoint in which an instance keeps its
// launched endpoint's replicas' figures when it is done with them, so
// status and the report can show them after the run.
const replicasKey = "replicas/"

// keptReplicas are an endpoint's replicas' figures as an instance left
// them at At: several instances share an endpoint, and the last to be done
// saw the servers stop.
type keptReplicas struct {
	managed.Figures
	At time.Time `json:"at"`
}

// KeepReplicas stores in cp the figures of the servers eaglet launched for
// an instance's endpoint ep, when this run started them. They are for
// status to show, so a failure to write them fails nothing.
func KeepReplicas(ep *Endpoint, cp stages.Checkpoints) {
	f, ok := ep.Replicas()
	if !ok || cp == nil {
		return
	}
	ran := false
	for _, r := range f.Replicas {
		ran = ran || r.UptimeSeconds > 0 || r.Restarts > 0
	}
	if !ran {
		return // nothing launched in this run: the last run's figures stand
	}
	b, err := json.Marshal(keptReplicas{Figures: f, At: time.Now()})
	if err == nil {
		_ = cp.PutCheckpoint(replicasKey+f.Endpoint, b)
	}
}

// Replicas reads the replicas' figures the instances kept at or after
// since (zero: in any run), the latest of each endpoint, in the order of
// the endpoints' names.
func Replicas(cps []stages.Checkpoints, since time.Time) ([]managed.Figures, error) {
	latest := map[string]keptReplicas{}
	for _, cp := range cps {
		err := cp.EachCheckpoint(replicasKey, func(key string, value []byte) error {
			var k keptReplicas
			if err := json.Unmarshal(value, &k); err != nil {
				return fmt.Errorf("checkpoint %s: %w", key, err)
			}
			if prev, ok := latest[k.Endpoint]; !k.At.Before(since) && (!ok || k.At.After(prev.At)) {
				latest[k.Endpoint] = k
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	var out []managed.Figures
	for _, k := range latest {
		out = append(out, k.Figures)
	}
	slices.SortFunc(out, func(a, b managed.Figures) int { return strings.Compare(a.Endpoint, b.Endpoint) })
	return out, nil
}
