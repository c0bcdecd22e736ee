package state

import (
	"context"
	"slices"
	"testing"
)

// TestStore_Collapsed: a key held by several instances is read once, from
// the instance first by ID, and each other copy is counted against that
// one; failed and set-aside records are no copies.
func TestStore_Collapsed(t *testing.T) {
	s := openTemp(t)
	put := func(inst string, items ...Item) {
		for i := range items {
			items[i].FP, items[i].Data, items[i].OutHash = "fp", []byte(`{"from":"`+inst+`"}`), items[i].Key
		}
		if err := s.Commit(inst, items); err != nil {
			t.Fatal(err)
		}
	}
	put("f[a]", Item{Key: "k1"}, Item{Key: "k2"})
	put("f[b]", Item{Key: "k1"}, Item{Key: "k3"}, Item{Key: "k4", Status: 3})
	put("f[c]", Item{Key: "k1"}, Item{Key: "k3"}, Item{Key: "k4"})
	got, err := s.Collapsed([]string{"f[c]", "f[a]", "f[b]"})
	if err != nil {
		t.Fatal(err)
	}
	want := []Collapse{{"f[b]", "f[a]", 1}, {"f[c]", "f[a]", 1}, {"f[c]", "f[b]", 1}}
	if !slices.Equal(got, want) {
		t.Errorf("collapsed %v; want %v", got, want)
	}
	var read []string
	s.EachOutput(context.Background(), []string{"f[c]", "f[b]", "f[a]"}, func(r Row) error {
		read = append(read, r.Key+" "+string(r.Data))
		return nil
	})
	if w := []string{`k1 {"from":"f[a]"}`, `k2 {"from":"f[a]"}`, `k3 {"from":"f[b]"}`, `k4 {"from":"f[c]"}`}; !slices.Equal(read, w) {
		t.Errorf("read %v; want %v (the instance first by ID wins)", read, w)
	}
}
