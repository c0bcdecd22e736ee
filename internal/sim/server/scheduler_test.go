package server

import (
	"math"
	"testing"
)

// TestScheduler_RetractAsSGLang: when decode outgrows the cache, the
// sequences with the least output go first (the longest prompt first among
// equals) until the rest have room for their next token, and the new-token
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

// TestScheduler_RetractsToNextToken: SGLang retracts at least one sequence
// and then only while the rest have no room for one more token each
// (check_decode_mem), not for 20 steps; retracted sequences join the back
// of the queue, behind requests that were waiting.
func TestScheduler_RetractsToNextToken(t *testing.T) {
	tests := []struct {
		name    string
		outputs []float64 // of four sequences with 10-token prompts
		kv      int
		want    int // sequences retracted
	}{
		// 1,040 in 1,000: the one with the least output (10 + 100) frees
		// enough for the next token of the three left (930 + 3).
		{"one frees enough", []float64{300, 300, 300, 100}, 1000, 1},
		// With room for a token each but not for 20 steps, nothing more
		// goes: 20 steps would have taken a second.
		{"no 20-step headroom", []float64{320, 300, 300, 40}, 960, 1},
		// The youngest two must both go before the last two fit a token.
		{"two needed", []float64{500, 400, 60, 60}, 950, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &scheduler{cfg: Config{Speed: 1000, KVTokens: tt.kv, ClipEstimate: 4096}, ratio: minRatio}
			waiting := &seq{prompt: 10, total: 100, maxTokens: 100}
			s.queue = []*seq{waiting}
			for _, out := range tt.outputs {
				s.running = append(s.running, &seq{prompt: 10, produced: out, total: 5000, maxTokens: 8000})
			}
			s.retract()
			if got := int(s.retractions); got != tt.want {
				t.Fatalf("%d retracted; want %d", got, tt.want)
			}
			if s.kvUsed()+len(s.running) > tt.kv {
				t.Errorf("%d used by %d running: no room for their next token in %d", s.kvUsed(), len(s.running), tt.kv)
			}
			if s.queue[0] != waiting || len(s.queue) != 1+tt.want {
				t.Errorf("queue %v: retracted sequences must wait behind the one already waiting", s.queue)
			}
		})
	}
}

// TestScheduler_FullBatchWaitsForAFinish: once admission stops for want of
// room, a falling ratio admits nothing more until a sequence leaves the
// batch, as SGLang's batch_is_full does.
func TestScheduler_FullBatchWaitsForAFinish(t *testing.T) {
	s := &scheduler{cfg: Config{Speed: 1000, KVTokens: 10000, ClipEstimate: 4096}, ratio: initRatio}
	short := &seq{prompt: 100, total: 8000, maxTokens: 8000, notify: make(chan struct{}, 1)}
	s.queue = []*seq{short}
	for range 2 {
		s.queue = append(s.queue, &seq{prompt: 100, total: 8000, maxTokens: 8000, notify: make(chan struct{}, 1)})
	}
	s.schedule()
	if len(s.running) != 2 || !s.full {
		t.Fatalf("%d running, full %v; want 2 and the batch full", len(s.running), s.full)
	}
	s.ratio = 0.1 // the third would fit now
	s.schedule()
	if len(s.running) != 2 {
		t.Fatalf("%d running: a full batch admitted before any sequence left", len(s.running))
	}
	short.total = 1
	s.step(0.01)
	if len(s.running) != 2 || short.done != true {
		t.Fatalf("%d running after the first ended; want the third admitted in its place", len(s.running))
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
