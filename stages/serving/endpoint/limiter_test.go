package endpoint

import (
	"context"
	"math"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/stages/serving/backend"
)

func TestLimiter_WeightedShares(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(8, 8, false)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel() // the waiters left give up
		// Both groups queue far more than the capacity; slots are granted by share.
		granted := map[string]int{}
		done := make(chan string, 100)
		for _, g := range []string{"a", "b"} {
			w := 1.0
			if g == "b" {
				w = 3
			}
			for range 40 {
				go func() {
					if err := l.acquire(ctx, g, w); err == nil {
						done <- g
					}
				}()
			}
		}
		for range 8 {
			granted[<-done]++
		}
		synctest.Wait() // every waiter queues
		// Free everything and count the next eight grants, made with all queued.
		for g, n := range granted {
			for range n {
				l.release(g, 0, 0)
			}
		}
		next := map[string]int{}
		for range 8 {
			next[<-done]++
		}
		if next["a"] != 2 || next["b"] != 6 {
			t.Errorf("with weights 1:3 and 8 slots, grants were %v; want a:2 b:6", next)
		}
	})
}

func TestGradient_GrowsThenBacksOff(t *testing.T) {
	g := &gradient{probing: true}
	limit := 16.0
	// The server keeps 1 ms per token up to 40 in flight, then queues.
	perToken := func(inflight float64) float64 {
		if inflight <= 40 {
			return 0.001
		}
		return 0.001 * inflight / 40
	}
	for range 2000 {
		limit = g.observe(limit, 400, perToken(limit)*200, 200)
	}
	if limit < 35 || limit > 60 {
		t.Errorf("limit settled at %.1f; want near the server's knee of 40", limit)
	}
}

// TestGradient_RelearnsASlowerServer: when the server becomes twice as slow
// for reasons of its own (its knee still at 40 in flight), backing off
// cannot restore the old speed; the limit must find the knee again rather
// than settle near 4.
func TestGradient_RelearnsASlowerServer(t *testing.T) {
	g := &gradient{probing: true}
	limit := 16.0
	factor := 1.0
	perToken := func(inflight float64) float64 {
		return factor * 0.001 * math.Max(1, inflight/40)
	}
	for range 2000 {
		limit = g.observe(limit, 400, perToken(limit)*200, 200)
	}
	before := limit
	factor = 2
	var lowest float64 = limit
	for range 4000 {
		limit = g.observe(limit, 400, perToken(limit)*200, 200)
		lowest = math.Min(lowest, limit)
	}
	t.Logf("limit %.1f before the slowdown, fell to %.1f, settled at %.1f", before, lowest, limit)
	if limit < 30 || limit > 60 {
		t.Errorf("after the server slowed down the limit settled at %.1f; want near its knee of 40", limit)
	}
}

// TestGradient_StallSetsCeiling: a server preempting shows no slower
// tokens, only streams going silent. A stall backs the limit off a tenth,
// the next ones in the same half round are the same event, and the limit
// then grows past that level by one slot a round, not by the gradient's
// stride.
func TestGradient_StallSetsCeiling(t *testing.T) {
	g := &gradient{probing: true}
	limit := g.stalled(50)
	if limit != 45 || g.stalled(limit) != 45 {
		t.Fatalf("limit %v after a stall at 50 and another at once; want 45", limit)
	}
	for range 450 { // ten rounds of 45 answers at an unchanging speed
		limit = g.observe(limit, 400, 0.2, 200)
	}
	if limit < 45 || limit > 56 {
		t.Errorf("limit %.1f ten rounds after a stall at 50; want about 55", limit)
	}
}

func TestStreamGaps_TellsAStallOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(40, 400, true)
		s := l.watchStream(1000)
		for range 10 {
			s.event(backend.Progress{})
			time.Sleep(time.Millisecond)
		}
		time.Sleep(150 * time.Millisecond)
		s.event(backend.Progress{})
		s.event(backend.Progress{})
		if got := l.current(); got != 36 {
			t.Errorf("limit %d after a stream went silent for 150 ms; want 36", got)
		}
		if !s.told {
			t.Error("the stall was not told")
		}
	})
}

// TestLimiter_FreeSlotsNeverJumpTheQueue: a request takes a free slot on
// the spot only while nobody waits; otherwise it queues behind those that
// came first, and a waiter that gives up leaves the queue.
func TestLimiter_FreeSlotsNeverJumpTheQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := newLimiter(1, 1, false)
		ctx := context.Background()
		if err := l.acquire(ctx, "a", 1); err != nil {
			t.Fatal(err)
		}
		queued := func(n int) {
			t.Helper()
			synctest.Wait()
			l.mu.Lock()
			q := l.queued
			l.mu.Unlock()
			if q != n {
				t.Fatalf("%d waiting, want %d", q, n)
			}
		}
		cancelled, cancel := context.WithCancel(ctx)
		defer cancel()
		gaveUp := make(chan error)
		go func() { gaveUp <- l.acquire(cancelled, "a", 1) }()
		queued(1)
		order := make(chan string, 2)
		for _, name := range []string{"first", "second"} {
			go func() {
				if l.acquire(ctx, "a", 1) == nil {
					order <- name
				}
			}()
			queued(2)
			if name == "first" {
				cancel()
				if err := <-gaveUp; err == nil {
					t.Fatal("a cancelled waiter got a slot")
				}
				queued(1)
			}
		}
		for _, want := range []string{"first", "second"} {
			l.release("a", 0, 0)
			select {
			case got := <-order:
				if got != want {
					t.Fatalf("slot went to %s, want %s", got, want)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("no slot granted to %s", want)
			}
		}
		l.release("a", 0, 0)
		queued(0)
		if err := l.acquire(ctx, "a", 1); err != nil { // free, nobody waits: on the spot
			t.Fatal(err)
		}
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.inflight != 1 || l.groups["a"].inflight != 1 {
			t.Fatalf("in flight %d (group %d), want 1", l.inflight, l.groups["a"].inflight)
		}
	})
}
