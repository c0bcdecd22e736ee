package budget

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/stages"
)

// TestBudget_KnownAnswerWaitsForRoom: an answer found again during a run
// (another dataset asked the same prompt) that does not fit beside the
// margin kept for the requests in flight waits for them, as a new request
// does, rather than being left out as over a budget that still has room.
// Before dispatch it decides at once, and a run that ends stops the wait.
func TestBudget_KnownAnswerWaitsForRoom(t *testing.T) {
	newTight := func() (*Budget, *Ticket) {
		tokens := &Limit{name: "completion_tokens", max: 10_000, fixed: func(int) float64 { return 0 }, perToken: 1}
		b := New([]*Limit{tokens}, 0, 1_000, 4096, func() (stages.Usage, error) { return stages.Usage{}, nil })
		// One request in flight, expected at 1,000 tokens with a wide
		// margin: 9,000 known tokens do not fit beside it now.
		tk, err := b.Admit(context.Background(), 0, 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		return b, tk
	}
	t.Run("before dispatch", func(t *testing.T) {
		b, _ := newTight()
		if ok, err := b.TakeKnown(context.Background(), 0, 9_000, false); err != nil || ok {
			t.Fatalf("took %v, %v; want left for the run at once", ok, err)
		}
	})
	t.Run("in a run, the request in flight ends short", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, tk := newTight()
			done := make(chan bool)
			go func() {
				ok, err := b.TakeKnown(context.Background(), 0, 9_000, true)
				if err != nil {
					t.Error(err)
				}
				done <- ok
			}()
			select {
			case ok := <-done:
				t.Fatalf("decided (%v) while the request in flight could still need the room", ok)
			case <-time.After(50 * time.Millisecond):
			}
			tk.Finish(0, 400)
			if ok := <-done; !ok {
				t.Fatal("left out, though 9,600 of 10,000 tokens were spent once the request ended")
			}
		})
	})
	t.Run("in a run, the request in flight ends long", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, tk := newTight()
			done := make(chan bool)
			go func() {
				ok, _ := b.TakeKnown(context.Background(), 0, 9_000, true)
				done <- ok
			}()
			synctest.Wait() // it waits for room
			tk.Finish(0, 1_500)
			if ok := <-done; ok {
				t.Fatal("kept 9,000 tokens beside 1,500 spent on a 10,000 budget")
			}
		})
	})
	t.Run("the run ends", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			b, _ := newTight()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error)
			go func() {
				_, err := b.TakeKnown(ctx, 0, 9_000, true)
				done <- err
			}()
			synctest.Wait() // it waits for room
			cancel()
			if err := <-done; !errors.Is(err, context.Canceled) {
				t.Fatalf("got %v; want the run's end", err)
			}
		})
	})
}

// TestBudget_KeptAnswersArePriced: a record resumed with answers an
// interrupted run kept is priced as a record in flight that far along,
// not as one with nothing yet: those tokens count when it finishes.
func TestBudget_KeptAnswersArePriced(t *testing.T) {
	tokens := &Limit{name: "completion_tokens", max: 6_000, fixed: func(int) float64 { return 0 }, perToken: 1}
	b := New([]*Limit{tokens}, 0, 200, 4096, func() (stages.Usage, error) { return stages.Usage{}, nil })
	if err := b.ensurePrior(); err != nil {
		t.Fatal(err)
	}
	if fits, _ := b.fits(0, 3, 0); !fits {
		t.Fatal("a three-question record of 200-token answers does not fit in 6,000 tokens")
	}
	if fits, _ := b.fits(0, 3, 7_000); fits {
		t.Error("a three-question record with 7,000 tokens of answers kept fits in 6,000")
	}
	tokens.max = 100_000
	tk, err := b.Admit(context.Background(), 0, 3, 1_000)
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.produced(b.now(), &b.pace); got != 1_000 {
		t.Errorf("admitted with 1,000 tokens kept, the ticket shows %d", got)
	}
}
