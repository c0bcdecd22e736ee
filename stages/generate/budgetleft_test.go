package generate

import (
	"context"
	"testing"

	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/stages/generate/answerlen"
)

// TestBudget_RecordsLeft: how many more records a budget lets through, at
// what a record has cost so far (earlier runs' included), for the progress
// line's ETA; the tightest limit decides, and nothing is said before a
// record has cost something.
func TestBudget_RecordsLeft(t *testing.T) {
	tokens := &limit{name: "completion_tokens", max: 10_000, fixed: func(int) float64 { return 0 }, perToken: 1}
	samples := &limit{name: "samples", max: 50, fixed: func(int) float64 { return 1 }}
	prior := stages.Usage{Records: 10, CompletionTokens: 2_000}
	b := newBudget([]*limit{tokens, samples}, 0, answerlen.NewModel(200, 4096), func() (stages.Usage, error) { return prior, nil })
	if n := b.recordsLeft(); n != -1 {
		t.Errorf("before anything is known: %d; want -1", n)
	}
	if err := b.ensurePrior(); err != nil {
		t.Fatal(err)
	}
	// 10 records took 2,000 tokens: 8,000 left is 40 more; samples allow 40.
	if n := b.recordsLeft(); n != 40 {
		t.Errorf("after the earlier run's 10 records: %d; want 40", n)
	}
	// Ten answers of 600 tokens: 20 records took 8,000, 400 a record, so
	// 2,000 left is 5 more, tighter than the 30 samples left.
	for range 10 {
		tk := &ticket{b: b, answers: 1}
		b.inflight[tk] = struct{}{}
		tk.finish(0, 600)
	}
	if n := b.recordsLeft(); n != 5 {
		t.Errorf("after 10 answers of 600 tokens: %d; want 5", n)
	}
	if ok, err := b.takeKnown(context.Background(), 0, 2_500, false); err != nil || ok {
		t.Fatalf("an answer found again of 2,500 tokens fits in 2,000: %v %v", ok, err)
	}
	tokens.max = 8_000
	if n := b.recordsLeft(); n != 0 {
		t.Errorf("a spent budget: %d; want 0", n)
	}
}

// TestQuota_AnswersLeft: a target needs (target - accepted) / acceptance
// more answers, the acceptance measured (pulled towards the prior while
// few are judged); nothing is said before earlier runs are counted in.
func TestQuota_AnswersLeft(t *testing.T) {
	q := newQuota(60, 0.8, &stages.Downstream{Kept: func(context.Context) (int, int, error) { return 10, 16, nil }})
	if n := q.answersLeft(); n != -1 {
		t.Errorf("before the earlier runs are counted: %d; want -1", n)
	}
	if err := q.ensureKept(context.Background()); err != nil {
		t.Fatal(err)
	}
	// 10 of 16 accepted, with the prior of 0.8 weighing 4: (10+3.2)/20 = 0.66;
	// 50 more accepted need ceil(50/0.66) = 76 answers.
	if n := q.answersLeft(); n != 76 {
		t.Errorf("10 of 16 accepted, target 60: %d; want 76", n)
	}
	for range 50 {
		q.count(true)
	}
	if n := q.answersLeft(); n != 0 {
		t.Errorf("target reached: %d; want 0", n)
	}
}
