package budget

import (
	"context"
	"testing"

	"github.com/eaglet-dev/eaglet/stages"
)

// TestBudget_RecordsLeft: how many more records a budget lets through, at
// what a record has cost so far (earlier runs' included), for the progress
// line's ETA; the tightest limit decides, and nothing is said before a
// record has cost something.
func TestBudget_RecordsLeft(t *testing.T) {
	tokens := &Limit{name: "completion_tokens", max: 10_000, fixed: func(int) float64 { return 0 }, perToken: 1}
	samples := &Limit{name: "samples", max: 50, fixed: func(int) float64 { return 1 }}
	prior := stages.Usage{Records: 10, CompletionTokens: 2_000}
	b := New([]*Limit{tokens, samples}, 0, 200, 4096, func() (stages.Usage, error) { return prior, nil })
	if n := b.RecordsLeft(); n != -1 {
		t.Errorf("before anything is known: %d; want -1", n)
	}
	if err := b.ensurePrior(); err != nil {
		t.Fatal(err)
	}
	// 10 records took 2,000 tokens: 8,000 left is 40 more; samples allow 40.
	if n := b.RecordsLeft(); n != 40 {
		t.Errorf("after the earlier run's 10 records: %d; want 40", n)
	}
	// Ten answers of 600 tokens: 20 records took 8,000, 400 a record, so
	// 2,000 left is 5 more, tighter than the 30 samples left.
	for range 10 {
		tk := &Ticket{b: b, answers: 1}
		b.inflight[tk] = struct{}{}
		tk.Finish(0, 600)
	}
	if n := b.RecordsLeft(); n != 5 {
		t.Errorf("after 10 answers of 600 tokens: %d; want 5", n)
	}
	if ok, err := b.TakeKnown(context.Background(), 0, 2_500, false); err != nil || ok {
		t.Fatalf("an answer found again of 2,500 tokens fits in 2,000: %v %v", ok, err)
	}
	tokens.max = 8_000
	if n := b.RecordsLeft(); n != 0 {
		t.Errorf("a spent budget: %d; want 0", n)
	}
}
