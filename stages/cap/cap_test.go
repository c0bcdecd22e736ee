package cap

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

type sliceInput []*conv.Record

func (s sliceInput) Count() int { return len(s) }
func (s sliceInput) Each(_ context.Context, fn func(*conv.Record) error) error {
	for _, r := range s {
		if err := fn(r); err != nil {
			return err
		}
	}
	return nil
}

type keptOutput struct {
	kept    []string
	dropped map[string]int
}

func (o *keptOutput) Emit(r *conv.Record) error { o.kept = append(o.kept, r.Key); return nil }
func (o *keptOutput) Keep(r *conv.Record) error { o.kept = append(o.kept, r.Key); return nil }
func (o *keptOutput) Drop(reason string)        { o.dropped[reason]++ }
func (o *keptOutput) Settle(keep func(string) bool, reason string) {
	o.kept = slices.DeleteFunc(o.kept, func(k string) bool {
		if keep(k) {
			return false
		}
		o.dropped[reason]++
		return true
	})
}

func sample(t *testing.T, in sliceInput, n, seed int) *keptOutput {
	t.Helper()
	c := &Cap{n: n, opts: &Options{Seed: seed}}
	out := &keptOutput{dropped: map[string]int{}}
	if err := c.Run(context.Background(), in, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestCap_LargerCapIsSuperset(t *testing.T) {
	var in sliceInput
	for i := range 1000 {
		in = append(in, &conv.Record{Key: fmt.Sprintf("%032x", i)})
	}
	small, large := sample(t, in, 100, 42), sample(t, in, 300, 42)
	if len(small.kept) != 100 || len(large.kept) != 300 || large.dropped["over max_samples"] != 700 {
		t.Fatalf("kept %d and %d, dropped %v", len(small.kept), len(large.kept), large.dropped)
	}
	inLarge := map[string]bool{}
	for _, k := range large.kept {
		inLarge[k] = true
	}
	for _, k := range small.kept {
		if !inLarge[k] {
			t.Fatalf("record %s is in the 100-sample but not in the 300-sample", k)
		}
	}
	// Not the first N: a sorted dataset must not be sampled from its top.
	first := 0
	for _, k := range small.kept {
		if k < fmt.Sprintf("%032x", 100) {
			first++
		}
	}
	if first > 30 {
		t.Errorf("%d of 100 sampled records are among the first 100 of the input; the sample is not spread", first)
	}
	if other := sample(t, in, 100, 43); equal(other.kept, small.kept) {
		t.Error("another seed chose the same sample")
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCap_KeepsLowestRanks: a cap of n keeps exactly the n records first
// by (Rank, key), all of them when there are fewer, none for 0.
func TestCap_KeepsLowestRanks(t *testing.T) {
	var in sliceInput
	for i := range 1000 {
		in = append(in, &conv.Record{Key: fmt.Sprintf("%032x", i*7919)})
	}
	byRank := slices.Clone(in)
	slices.SortFunc(byRank, func(a, b *conv.Record) int {
		return cmp.Or(cmp.Compare(Rank(7, a.Key), Rank(7, b.Key)), cmp.Compare(a.Key, b.Key))
	})
	for _, n := range []int{0, 1, 100, 999, 1000, 1500} {
		var want []string
		for _, r := range byRank[:min(n, len(byRank))] {
			want = append(want, r.Key)
		}
		slices.Sort(want)
		got := sample(t, in, n, 7)
		slices.Sort(got.kept)
		if !equal(got.kept, want) || got.dropped["over max_samples"] != len(in)-len(want) {
			t.Errorf("max_samples %d: kept %d records, dropped %v; want the %d first by rank", n, len(got.kept), got.dropped, len(want))
		}
	}
}
