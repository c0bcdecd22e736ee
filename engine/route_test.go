package engine_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/state"
)

// TestRun_DatasetlessFeedsPerDataset checks that a per-dataset instance
// after an instance over every dataset reads only its own dataset's
// records, for a Mapper (filter) and a Batch (cap) alike.
func TestRun_DatasetlessFeedsPerDataset(t *testing.T) {
	p, store, _ := enginetest.OpenAndRun(t, t.TempDir(), routeSpec(t, `
  - {name: all, uses: cap, needs: [load], with: {max_samples: 1000000}}
  - {name: filter, uses: filter, needs: [all], foreach: datasets, with: {keep: "true"}}
  - {name: sample, uses: cap, needs: [all], foreach: datasets, with: {max_samples: 1000000}}
`))
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
		if r.Outcome != engine.UpToDate {
			t.Errorf("second run: %s %s (%s)", id, r.Outcome, r.Decision)
		}
	}
}

// TestRun_CapKeepsTokensAndDatasets: cap passes records on without
// reading them (stages.KeyInput), so what it stores of each, its tokens
// and, over every dataset, its dataset, comes from the rows it read; it
// must be what reading the records gives.
func TestRun_CapKeepsTokensAndDatasets(t *testing.T) {
	tok, err := filepath.Abs("../internal/tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	_, store, _ := enginetest.OpenAndRun(t, t.TempDir(), routeSpec(t, `
  - {name: tok, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: `+tok+`}}
  - {name: all, uses: cap, needs: [tok], with: {max_samples: 1000000}}
`))
	sum := func(id string) (records int, prompt int64) {
		counts, err := store.Counts(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range counts {
			if c.Status == 0 {
				records, prompt = records+c.N, prompt+c.PromptTokens
			}
		}
		return records, prompt
	}
	var loaded int
	var loadedTokens int64
	for _, ds := range []string{"chat", "code"} {
		n, p := sum("tok[" + ds + "]")
		loaded, loadedTokens = loaded+n, loadedTokens+p
		kept, err := store.CountOutputs([]string{state.Part("all", ds)})
		if err != nil || kept != n {
			t.Errorf("all holds %d records of %s (%v); want its %d", kept, ds, err, n)
		}
	}
	if n, p := sum("all"); n != loaded || p != loadedTokens || p == 0 {
		t.Errorf("all: %d records of %d prompt tokens; want load's %d of %d", n, p, loaded, loadedTokens)
	}
}

// routeSpec is a spec of the bundled chat and code datasets, loaded per
// dataset, followed by the stages in more.
func routeSpec(t *testing.T, more string) string {
	t.Helper()
	data, err := filepath.Abs("../specs/examples/data")
	if err != nil {
		t.Fatal(err)
	}
	return `version: 1
name: route
state: state.db
datasets:
  chat: {source: ` + data + `/chat.jsonl, format: messages}
  code: {source: ` + data + `/code.jsonl, format: sharegpt}
stages:
  - {name: load, uses: load, foreach: datasets}` + more
}
