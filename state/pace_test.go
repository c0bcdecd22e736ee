package state

import "testing"

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
