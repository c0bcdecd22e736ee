package engine

import (
	"github.com/eaglet-dev/eaglet/internal/accept"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/state"
)

// acceptanceBuckets are the context buckets expressions read: the
// evaluate stage's default, doubling from 1k to 32k tokens.
var acceptanceBuckets = accept.Buckets{1000, 2000, 4000, 8000, 16000, 32000}

// latestAcceptance reads the store's latest evaluation for expressions:
// of the evaluate stage measured last, the drafter it measured last, at
// temperature 0 when it measured that. Zero (with empty maps) before any.
func latestAcceptance(store *state.Store) (specs.AcceptanceInfo, error) {
	info := specs.AcceptanceInfo{Dataset: map[string]float64{}, Context: map[string]float64{}}
	if store == nil {
		return info, nil
	}
	ev := store.Evaluations()
	stages, err := ev.Stages()
	if err != nil || len(stages) == 0 {
		return info, err
	}
	rows, err := ev.Rows(stages[len(stages)-1])
	if err != nil {
		return info, err
	}
	var drafter string
	samplings := map[string]bool{}
	for _, r := range rows {
		if r.Drafter != "" {
			drafter = r.Name
		}
	}
	for _, r := range rows {
		if r.Name == drafter && r.Drafter != "" {
			samplings[r.Sampling] = true
		}
	}
	if drafter == "" {
		return info, nil
	}
	sampling := "temperature=0"
	if !samplings[sampling] {
		for _, r := range rows {
			if r.Name == drafter && r.Drafter != "" {
				sampling = r.Sampling
				break
			}
		}
	}
	var mine []accept.Row
	for _, r := range rows {
		if r.Name == drafter && r.Drafter != "" && r.Sampling == sampling {
			mine = append(mine, r)
		}
	}
	total := accept.Sum(mine)
	info.Measured, info.Drafter, info.Sampling = true, drafter, sampling
	info.Length, info.Rate = total.AcceptLength(), total.AcceptRate()
	for _, l := range accept.Break(mine, accept.ByDataset).Lines {
		info.Dataset[l.Label] = l.AcceptLength()
	}
	for _, l := range accept.Break(mine, accept.ByContext(acceptanceBuckets)).Lines {
		info.Context[l.Label] = l.AcceptLength()
	}
	return info, nil
}
