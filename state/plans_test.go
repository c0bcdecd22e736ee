package state

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// TestStore_SavePlan_ReplacesAndGivesWay: the last plan saved is the one
// read back (through a read-only handle, as the report reads it), and a
// plan saved while another connection holds the write lock gives up after
// its short wait with ErrBusy instead of queueing behind the run.
func TestStore_SavePlan_ReplacesAndGivesWay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	t0 := time.UnixMilli(1_700_000_000_000)
	for i, fp := range []string{"fp1", "fp2"} {
		if err := s.SavePlan(ctx, Plan{Made: t0.Add(time.Duration(i) * time.Hour), SpecFP: fp, Body: []byte(fmt.Sprintf(`{"n":%d}`, i))}, time.Second); err != nil {
			t.Fatal(err)
		}
	}
	ro, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	p, err := ro.LastPlan(ctx)
	if err != nil || p == nil || p.SpecFP != "fp2" || string(p.Body) != `{"n":1}` || !p.Made.Equal(t0.Add(time.Hour)) {
		t.Fatalf("last plan %+v, %v; want the second", p, err)
	}
	var n int
	if err := s.r.QueryRow(`SELECT COUNT(*) FROM plans`).Scan(&n); err != nil || n != 1 {
		t.Errorf("%d plans kept (%v); want only the last", n, err)
	}

	run, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	tx, err := run.w.Begin() // BEGIN IMMEDIATE: the run's commit in progress
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	start := time.Now()
	err = s.SavePlan(ctx, Plan{Made: time.Now(), SpecFP: "fp3", Body: []byte(`{}`)}, 200*time.Millisecond)
	if !errors.Is(err, ErrBusy) || time.Since(start) > 5*time.Second {
		t.Fatalf("save beside a writer: %v after %s; want ErrBusy after about 200ms", err, time.Since(start))
	}
	tx.Rollback()
	// The writer connection waits as long as before for the next writes.
	var timeout int
	if err := s.w.QueryRow(`PRAGMA busy_timeout`).Scan(&timeout); err != nil || timeout != 10000 {
		t.Errorf("busy_timeout after the plan: %d (%v); want 10000 back", timeout, err)
	}
	if p, _ := ro.LastPlan(ctx); p == nil || p.SpecFP != "fp2" {
		t.Errorf("a plan that gave way replaced the last one: %+v", p)
	}
}
