package engine_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/state"
)

// TestRun_DatasetlessFeedsPerDataset checks that a per-dataset instance
// after an instance over every dataset reads only its own dataset's
// records, for a Mapper (filter) and a Batch (cap) alike.
func TestRun_DatasetlessFeedsPerDataset(t *testing.T) {
	data, err := filepath.Abs("../specs/examples/data")
	if err != nil {
		t.Fatal(err)
	}
	spec := `version: 1
name: route
state: state.db
datasets:
  chat: {source: ` + data + `/chat.jsonl, format: messages}
  code: {source: ` + data + `/code.jsonl, format: sharegpt}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: all, uses: cap, needs: [load], with: {max_samples: 1000000}}
  - {name: filter, uses: filter, needs: [all], foreach: datasets, with: {keep: "true"}}
  - {name: sample, uses: cap, needs: [all], foreach: datasets, with: {max_samples: 1000000}}
`
	p, store, _ := enginetest.OpenAndRun(t, t.TempDir(), spec)
	for _, ds := range []string{"chat", "code"} {
		loaded, err := store.CountOutputs([]string{"load[" + ds + "]"})
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []string{"filter[" + ds + "]", "sample[" + ds + "]"} {
			n, other := 0, 0
			err := store.EachOutput(context.Background(), []string{id}, func(row state.Row) error {
				n++
				var rec conv.Record
				err := json.Unmarshal(row.Data, &rec)
				if err == nil && rec.Dataset != ds {
					other++
				}
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			if n != loaded || other != 0 {
				t.Errorf("%s: %d records, %d of another dataset; want the %d of load[%s]", id, n, other, loaded, ds)
			}
		}
	}
	// Run again: everything is up to date.
	for id, r := range enginetest.Run(t, p, store, nil) {
		if r.Action != "up to date" {
			t.Errorf("second run: %s %s (%s)", id, r.Action, r.Why)
		}
	}
}
