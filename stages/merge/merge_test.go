package merge

import (
	"fmt"
	"testing"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages/conv"
)

func TestMerge_WeightsAndShuffle(t *testing.T) {
	spec := &specs.Spec{Datasets: []*specs.Dataset{{Name: "a", Weight: 1}, {Name: "b", Weight: 1}}}
	m := &Merge{opts: &Options{ShuffleSeed: 7, Weights: map[string]float64{"a": 0.5, "b": 2}}, spec: spec}
	counts := map[string]int{}
	for i := range 2000 {
		for _, ds := range []string{"a", "b"} {
			counts[ds] += m.copies(&conv.Record{Key: fmt.Sprintf("%s-%d", ds, i), Dataset: ds})
		}
	}
	if counts["b"] != 4000 {
		t.Errorf("weight 2 gave %d copies of 2000 records; want 4000", counts["b"])
	}
	if counts["a"] < 900 || counts["a"] > 1100 {
		t.Errorf("weight 0.5 kept %d of 2000 records; want about 1000", counts["a"])
	}
	rec := &conv.Record{Key: "k"}
	other := &Merge{opts: &Options{ShuffleSeed: 8}, spec: spec}
	if m.Order(rec) != m.Order(rec) || m.Order(rec) == other.Order(rec) {
		t.Error("the shuffle must be the same for a seed and differ between seeds")
	}
	if m.Order(rec) >= 1<<63 {
		t.Error("order must fit a signed 64-bit integer")
	}
}
