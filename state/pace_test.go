package state

import (
	"context"
	"math"
	"testing"
)

// TestStore_AnswerPace: the pace of answers is their tokens over their
// requests' time, the last finish is the latest done time, and answers
// sent by a time are counted with their tokens; failed outcomes and those
// without timings count in neither.
func TestStore_AnswerPace(t *testing.T) {
	s := openTemp(t)
	items := []Item{
		{Key: "a", FP: "fp", CompletionTokens: 100, Sent: 1_000, Finished: 3_000},  // 2 s
		{Key: "b", FP: "fp", CompletionTokens: 300, Sent: 2_000, Finished: 6_000},  // 4 s
		{Key: "c", FP: "fp", CompletionTokens: 200, Sent: 5_000, Finished: 11_000}, // 6 s
		{Key: "d", FP: "fp", CompletionTokens: 50},                                 // no timing
		{Key: "e", FP: "fp", Status: 2, Reason: "http 500", Sent: 1_000, Finished: 20_000},
	}
	if err := s.Commit("generate[d]", items); err != nil {
		t.Fatal(err)
	}
	last, pace, err := s.AnswerPace("generate[d]")
	if err != nil || last != 11_000 || pace != 50 {
		t.Errorf("AnswerPace = %d, %v, %v; want 11000, 50 tokens/s (600 tokens in 12 s)", last, pace, err)
	}
	for _, tt := range []struct {
		by, n, tokens int64
	}{{999, 0, 0}, {2_000, 2, 400}, {5_000, 3, 600}} {
		if n, tokens, err := s.AnswersSentBy("generate[d]", tt.by); err != nil || n != tt.n || tokens != tt.tokens {
			t.Errorf("AnswersSentBy(%d) = %d, %d, %v; want %d, %d", tt.by, n, tokens, err, tt.n, tt.tokens)
		}
	}
	if last, pace, err := s.AnswerPace("other"); err != nil || last != 0 || pace != 0 {
		t.Errorf("AnswerPace of an instance with no answers = %d, %v, %v; want 0, 0", last, pace, err)
	}
}

// TestStore_ThroughputOf: the endpoint's throughput is the answers' tokens
// over the time any of them was in flight, across instances, so answers
// running together count their overlap once and the hour between two runs
// does not count; failed outcomes and those without timings take no part,
// and only the latest answers are read.
func TestStore_ThroughputOf(t *testing.T) {
	s := openTemp(t)
	const hour = 3_600_000
	if err := s.Commit("generate[a]", []Item{
		{Key: "a", FP: "fp", CompletionTokens: 500, Sent: 1_000, Finished: 11_000},
		{Key: "b", FP: "fp", CompletionTokens: 500, Sent: 6_000, Finished: 16_000},
		{Key: "c", FP: "fp", CompletionTokens: 9_999},
		{Key: "d", FP: "fp", Status: 2, Reason: "http 500", Sent: 1, Finished: 20_000},
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit("generate[b]", []Item{
		{Key: "e", FP: "fp", CompletionTokens: 1_000, Sent: hour, Finished: hour + 10_000},
	}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tc := range []struct {
		ids    []string
		limit  int
		tps    float64
		n      int
		reason string
	}{
		{[]string{"generate[a]", "generate[b]"}, 100, 80, 3, "2,000 tokens in 25 s busy"},
		{[]string{"generate[a]"}, 100, 1000.0 / 15, 2, "1,000 tokens in 15 s, the overlap once"},
		{[]string{"generate[a]", "generate[b]"}, 1, 100, 1, "the latest answer only"},
		{[]string{"other"}, 100, 0, 0, "no answers"},
	} {
		tps, n, err := s.ThroughputOf(ctx, tc.ids, tc.limit)
		if err != nil || n != tc.n || math.Abs(tps-tc.tps) > 1e-9 {
			t.Errorf("ThroughputOf(%v, %d) = %v, %d, %v; want %v, %d (%s)", tc.ids, tc.limit, tps, n, err, tc.tps, tc.n, tc.reason)
		}
	}
}
