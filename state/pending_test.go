package state

import (
	"context"
	"slices"
	"testing"
)

// TestEachPending_SeveralUpstream: an item stage after several instances
// (a stage over every dataset after per-dataset ones) is handed, in key
// order and once each, every input key it has no current outcome for:
// none, one made under another configuration or from another input, or
// one that failed or was skipped; a key two upstream instances hold is
// handed once, as the first instance by name has it.
func TestEachPending_SeveralUpstream(t *testing.T) {
	s := openTemp(t)
	const fp = "fp1"
	upstream := map[string][]string{
		"f[a]": {"k01", "k04", "k07", "k10"},
		"f[b]": {"k02", "k04", "k05", "k08"}, // k04 also in f[a]
		"f[c]": {"k03", "k06", "k09"},
	}
	for inst, keys := range upstream {
		var items []Item
		for _, k := range keys {
			items = append(items, Item{Key: k, FP: "up", Data: []byte(`{}`), OutHash: "h-" + k})
		}
		if err := s.Commit(inst, items); err != nil {
			t.Fatal(err)
		}
	}
	outcomes := []Item{
		{Key: "k01", FP: fp, InHash: "h-k01", Data: []byte(`{}`)},            // current: not pending
		{Key: "k02", FP: "fp0", InHash: "h-k02", Data: []byte(`{}`)},         // another configuration
		{Key: "k03", FP: fp, InHash: "old", Data: []byte(`{}`)},              // another input
		{Key: "k04", FP: fp, InHash: "h-k04", Data: []byte(`{}`)},            // current, whichever copy
		{Key: "k05", FP: fp, InHash: "h-k05", Status: 2, Reason: "http 500"}, // failed
		{Key: "k06", FP: fp, InHash: "h-k06", Status: 3, Reason: "budget"},   // skipped
		{Key: "k07", FP: fp, InHash: "h-k07", Status: 1, Reason: "filtered"}, // dropped: stands
	}
	if err := s.Commit("after", outcomes); err != nil {
		t.Fatal(err)
	}
	var got []string
	if err := s.EachPending(context.Background(), "after", []string{"f[c]", "f[a]", "f[b]"}, fp, func(r Row) error {
		got = append(got, r.Key)
		if r.Hash != "h-"+r.Key {
			t.Errorf("%s handed with input hash %q", r.Key, r.Hash)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	want := []string{"k02", "k03", "k05", "k06", "k08", "k09", "k10"}
	if !slices.Equal(got, want) {
		t.Errorf("pending %v; want %v", got, want)
	}
}
