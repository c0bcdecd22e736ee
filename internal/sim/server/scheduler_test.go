package server

import (
	"math"
	"testing"
)

// TestScheduler_RetractAsSGLang: when decode outgrows the cache, the
// sequences with the least output go first (the longest prompt first among
// equals) until the rest have 20 decode steps of room, and the new-token
// ratio is re-estimated from the rest, as SGLang's retract_decode does.
func TestScheduler_RetractAsSGLang(t *testing.T) {
	s := &scheduler{cfg: Config{Speed: 1000, KVTokens: 1000, ClipEstimate: 4096}, ratio: minRatio}
	a := &seq{prompt: 100, produced: 300, total: 5000, maxTokens: 8000}
	b := &seq{prompt: 100, produced: 250, total: 5000, maxTokens: 8000}
	c := &seq{prompt: 150, produced: 50, total: 5000, maxTokens: 8000}
	d := &seq{prompt: 100, produced: 50, total: 5000, maxTokens: 8000}
	s.running = []*seq{c, a, d, b}
	s.retract()
	if len(s.queue) != 1 || s.queue[0] != c || s.retractions != 1 || s.recomputed != 200 {
		t.Fatalf("queue %v, %d retractions, %d recomputed; want c retracted with 200 tokens to recompute", s.queue, s.retractions, s.recomputed)
	}
	if want := float64(300+250+50+3*retractSteps) / (3*8000 + 1); math.Abs(s.ratio-want) > 1e-12 {
		t.Errorf("ratio %v after retraction; want %v", s.ratio, want)
	}
}

// TestScheduler_AdmitReservesAsSGLang: a running sequence reserves the
// ratio of its remaining (clipped) output, one admitted in the same round
// all of it; the ratio decays by one step per decoded token.
func TestScheduler_AdmitReservesAsSGLang(t *testing.T) {
	s := &scheduler{cfg: Config{Speed: 1000, KVTokens: 10000, ClipEstimate: 4096}, ratio: initRatio}
	for range 3 {
		s.queue = append(s.queue, &seq{prompt: 100, total: 8000, maxTokens: 8000})
	}
	// In one round each new sequence reserves its whole 4,096 (clipped):
	// two fit in 10,000 tokens, a third does not.
	s.admit()
	if len(s.running) != 2 {
		t.Fatalf("%d running after the first round; want 2", len(s.running))
	}
	// Running, they reserve 0.7 of it: 200 + 2 x 2,867 + 100 + 4,096 is
	// still over 10,000; at 0.6 the third fits.
	s.admit()
	if len(s.running) != 2 {
		t.Fatalf("%d running at ratio 0.7; want 2", len(s.running))
	}
	s.ratio = 0.6
	s.admit()
	if len(s.running) != 3 {
		t.Fatalf("%d running at ratio 0.6; want 3", len(s.running))
	}
	before := s.ratio
	s.step(0.1) // 100 decode steps
	if want := before - 100*ratioDecay; math.Abs(s.ratio-want) > 1e-9 {
		t.Errorf("ratio %v after 100 decode steps from %v; want %v", s.ratio, before, want)
	}
}

// TestScheduler_PrefillStallsDecode: recomputing a retracted sequence's
// prefix takes the server's time from every sequence, which is what makes
// preemption expensive.
func TestScheduler_PrefillStallsDecode(t *testing.T) {
	s := &scheduler{cfg: Config{Speed: 100, PrefillSpeed: 1000, ClipEstimate: 4096}, ratio: initRatio}
	a := &seq{prompt: 10, total: 1000, maxTokens: 1000, notify: make(chan struct{}, 1)}
	b := &seq{prompt: 10, produced: 490, prefill: 500, total: 1000, maxTokens: 1000, notify: make(chan struct{}, 1)}
	s.running = []*seq{a, b}
	s.step(1)
	if a.produced != 50 || b.produced != 540 || b.prefill != 0 {
		t.Errorf("after 1 s with 0.5 s of prefill: produced %v and %v (prefill left %v); want 50 and 540", a.produced, b.produced, b.prefill)
	}
}
