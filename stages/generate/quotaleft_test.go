package generate

import (
	"context"
	"testing"

	"github.com/eaglet-dev/eaglet/stages"
)

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
