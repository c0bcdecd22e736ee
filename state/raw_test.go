package state

import (
	"errors"
	"testing"
)

// TestRawTx_FailureLeavesNothing: a raw transaction whose work fails after
// writing rolls back all of it, and the writer's connection is not left in
// a transaction: the next writes, raw or through database/sql, commit.
func TestRawTx_FailureLeavesNothing(t *testing.T) {
	s := openTemp(t)
	items := func(prefix string, n int) []Item {
		var out []Item
		for i := range n {
			out = append(out, Item{Key: prefix + string(rune('a'+i%26)) + string(rune('a'+i/26)), OutHash: "h", Data: []byte(`{}`)})
		}
		return out
	}
	stop := errors.New("stop")
	err := s.rawTx(func(w *rawWriter) error {
		if err := putBatch(w, "load[d]", items("x", batchRows+3)); err != nil {
			return err
		}
		return stop
	})
	if !errors.Is(err, stop) {
		t.Fatalf("rawTx returned %v; want the work's error", err)
	}
	if n, err := s.CountOutputs([]string{"load[d]"}); err != nil || n != 0 {
		t.Errorf("after a failed transaction %d rows stayed (%v); want none", n, err)
	}
	if err := s.CommitOutcomes("filter[d]", items("y", outcomeRows+1)); err != nil {
		t.Fatalf("raw commit after a failed one: %v", err)
	}
	if err := s.Commit("gen[d]", items("z", 2)); err != nil {
		t.Fatalf("commit through database/sql after a failed raw one: %v", err)
	}
	for inst, want := range map[string]int{"filter[d]": outcomeRows + 1, "gen[d]": 2} {
		if n, err := s.CountOutputs([]string{inst}); err != nil || n != want {
			t.Errorf("%s holds %d rows (%v); want %d", inst, n, err, want)
		}
	}
}
