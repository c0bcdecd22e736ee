package state

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
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

// TestRawTx_DiskFull: a write that finds the disk full (here the store's
// page limit, which fails a statement; a full disk that fails the commit
// itself, after which SQLite has rolled back and a rollback would say
// "cannot rollback", was checked on a 2 MiB tmpfs) is known as such.
// What was committed before stays, and once there is room the same writer
// commits again.
func TestRawTx_DiskFull(t *testing.T) {
	s := openTemp(t)
	items := func(prefix string, n int) []Item {
		var out []Item
		for i := range n {
			out = append(out, Item{Key: fmt.Sprintf("%s%05d", prefix, i), OutHash: "h", Data: []byte(strings.Repeat("x", 200))})
		}
		return out
	}
	if err := s.CommitOutcomes("filter[a]", items("a", 10)); err != nil {
		t.Fatal(err)
	}
	var pages int
	if err := s.w.QueryRow("PRAGMA page_count").Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(fmt.Sprintf("PRAGMA max_page_count = %d", pages+2)); err != nil {
		t.Fatal(err)
	}
	err := s.CommitOutcomes("filter[b]", items("b", 3*outcomeRows))
	if err == nil || !DiskFull(err) || strings.Contains(err.Error(), "cannot rollback") {
		t.Fatalf("commit past the page limit: %v; want only that the disk is full", err)
	}
	if _, err := s.w.Exec("PRAGMA max_page_count = 1073741823"); err != nil {
		t.Fatal(err)
	}
	if err := s.CommitOutcomes("filter[b]", items("b", 3*outcomeRows)); err != nil {
		t.Fatalf("commit once there is room: %v", err)
	}
	for inst, want := range map[string]int{"filter[a]": 10, "filter[b]": 3 * outcomeRows} {
		if n, err := s.CountOutputs([]string{inst}); err != nil || n != want {
			t.Errorf("%s holds %d rows (%v); want %d", inst, n, err, want)
		}
	}
	if DiskFull(errors.New("database or disk is full")) || !DiskFull(fmt.Errorf("write out.jsonl: %w", syscall.ENOSPC)) {
		t.Error("DiskFull goes by the error's code, not its text")
	}
}
