package endpoint

import (
	"math"
	"math/rand/v2"
	"testing"
)

// BenchmarkKVPredictRoom is one admission decision of concurrency: auto
// with 45 requests in flight and 600 ended answers, refitting the lengths
// each time (the limiter refits only when an answer ended).
func BenchmarkKVPredictRoom(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	p := newKVPredict(1)
	for range 600 {
		p.lengths.Add(math.Min(16384, math.Exp(7.8+rng.NormFloat64())))
	}
	var st kvState
	st.capacity = 159277
	for range 45 {
		st.flights = append(st.flights, inFlight{tokens: 3000 * rng.Float64() * 2, maxTokens: 16384})
	}
	for b.Loop() {
		p.fitted = 0
		p.room(st, 16384, 8)
	}
}
