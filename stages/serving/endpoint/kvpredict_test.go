package endpoint

import (
	"math"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/stages/serving/backend"
)

// TestKVPredict_Room: how many more requests a decision lets through, over
// synthetic server states. With every ended answer 1,000 tokens long, the
// future is certain and the answer exact.
func TestKVPredict_Room(t *testing.T) {
	at := func(tokens ...float64) []inFlight {
		var out []inFlight
		for _, n := range tokens {
			out = append(out, inFlight{tokens: n, maxTokens: 16384})
		}
		return out
	}
	fixed := func() *kvPredict {
		p := newKVPredict(1)
		for range 20 {
			p.lengths.Add(1000)
		}
		return p
	}
	tests := []struct {
		name string
		p    func() *kvPredict
		st   kvState
		most int
		want int
	}{
		// Four halfway answers end at step 500 holding 4,000; k new ones
		// peak then at 4,000 + 500k, and at 1,000k just before they end.
		{"halfway batch", fixed, kvState{capacity: 10000, flights: at(500, 500, 500, 500)}, 20, 10},
		// The same four just started: together they peak at 4,000 + 1,000k.
		{"young batch", fixed, kvState{capacity: 10000, flights: at(0, 0, 0, 0)}, 20, 6},
		// Prompts of 250 tokens: 4 x 1,250 + 1,250k.
		{"prompts count", fixed, kvState{capacity: 10000, overhead: 250, flights: at(0, 0, 0, 0)}, 20, 4},
		// Already over: nothing more.
		{"full", fixed, kvState{capacity: 3000, flights: at(900, 900, 900, 900)}, 20, 0},
		{"bounded by most", fixed, kvState{capacity: 1e9}, 8, 8},
		{"no capacity known", fixed, kvState{}, 8, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.p().room(tt.st, 16384, tt.most); got != tt.want {
				t.Errorf("room = %d; want %d", got, tt.want)
			}
		})
	}
}

// TestLimiter_PredictsFromStreamedTokens: once answers have ended and the
// metrics gave the cache's size, releasing a request lets through as many
// as the requests in flight, at their streamed tokens, leave room for.
func TestLimiter_PredictsFromStreamedTokens(t *testing.T) {
	l := newLimiter(4, 400, true)
	l.streams = true
	l.capacity = 5500
	for range predictMinDone {
		l.predict.lengths.Add(1000)
	}
	var ws []*streamGaps
	for range 5 {
		ws = append(ws, l.watchStream(16384))
		l.inflight++
	}
	for _, w := range ws[:4] {
		w.event(backend.Progress{Tokens: 500, Exact: true})
	}
	// The fifth ends at 1,000 and leaves: the four at 500 hold 4,000
	// at their end (step 500) with k new ones at 500 each, and the new
	// ones 1,000k at theirs: three more fit in 5,500.
	ws[4].event(backend.Progress{Tokens: 1000, Exact: true})
	ws[4].end(0, 1000)
	l.groups["a"] = &group{weight: 1, inflight: 5}
	l.release("a", time.Second, 1000)
	if got := l.current(); got != 7 {
		t.Errorf("limit %d; want 4 running and 3 more", got)
	}
}

// TestLimiter_StallTeachesCapacity: without server metrics, a stream
// that went silent while the others streamed says the cache overflowed
// when it stopped, at what the client counted in flight then. Two such
// silences half a second apart at levels within a tenth of each other
// make the lower the cache's size; a silence every stream shared, one at
// a level well under what the cache held before, or a level seen once
// teaches nothing.
func TestLimiter_StallTeachesCapacity(t *testing.T) {
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	log := []heldAt{{at(0), 100_000}, {at(1000), 150_000}, {at(2000), 120_000}, {at(3000), 160_000}, {at(3100), 145_000}, {at(4000), 158_000}}
	type stall struct {
		since        int // ms
		corroborated bool
	}
	tests := []struct {
		name   string
		stalls []stall
		want   float64
	}{
		{"two near the top", []stall{{2500, true}, {3500, true}}, 158_000},
		{"seen once", []stall{{2500, true}}, 0},
		{"too close in time", []stall{{2500, true}, {3050, true}}, 0},
		{"every stream paused", []stall{{2500, false}, {3500, false}}, 0},
		{"well under a level held before", []stall{{1500, true}, {2500, true}}, 0},
		{"levels too far apart", []stall{{-500, true}, {2500, true}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimiter(40, 400, true)
			l.held = log
			for _, s := range tt.stalls {
				l.stalled(at(s.since), s.corroborated)
			}
			if l.capacity != tt.want {
				t.Errorf("capacity %v; want %v", l.capacity, tt.want)
			}
		})
	}
}

// TestLimiter_CapacityFromMetrics: the cache's size is SGLang's
// max_total_num_tokens; a server that exports only the share in use
// (vLLM) has it estimated as what the client counts in flight over that
// share, while nothing waits at the server.
func TestLimiter_CapacityFromMetrics(t *testing.T) {
	tests := []struct {
		name string
		load serverLoad
		want float64
	}{
		{"exported", serverLoad{running: 2, usage: 0.5, capacity: 9000}, 9000},
		{"from usage", serverLoad{running: 2, usage: 0.5}, 2000},
		{"queued requests hold nothing yet", serverLoad{running: 2, queued: 3, usage: 0.5}, 0},
		{"too empty to say", serverLoad{running: 2, usage: 0.1}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLimiter(4, 400, true)
			l.kv, l.streams = newKVControl(), true
			for range 2 {
				w := l.watchStream(16384)
				w.event(backend.Progress{Tokens: 500, Exact: true})
				l.inflight++
			}
			l.useLoad(tt.load)
			if math.Abs(l.capacity-tt.want) > 1e-9 {
				t.Errorf("capacity %v; want %v", l.capacity, tt.want)
			}
		})
	}
}

// TestKVPredict_FewAtRiskLeaveItToTheTail: where fewer than kmMinAtRisk
// answers are at risk, a decision's curve stops and the lognormal goes
// on. Kaplan-Meier drops to 0 at the longest ended answer when nothing
// running is as long, and a decision then took every running answer to
// end by it: early in a run, when the longest ended answer is a short
// one, that let the cache overflow.
func TestKVPredict_FewAtRiskLeaveItToTheTail(t *testing.T) {
	p := newKVPredict(1)
	for i := range 30 {
		p.lengths.Add(float64(500 + 50*i)) // 500 to 1,950
	}
	flights := []inFlight{{tokens: 1900, maxTokens: 16384}, {tokens: 1900, maxTokens: 16384}}
	if raw := p.lengths.Fit([]float64{1900, 1900}); raw.Survival(1950) != 0 {
		t.Fatalf("the raw curve's survival past the longest ended answer is %v; the test wants it 0", raw.Survival(1950))
	}
	p.refit(flights)
	if s := p.curve.Survival(1950); s == 0 {
		t.Error("a decision's survival past the longest ended answer, with one answer at risk there, is 0")
	}
	longer := 0
	for i := range 1000 {
		if p.curve.Sample(1900, (float64(i)+0.5)/1000, 16384) > 1950 {
			longer++
		}
	}
	if longer < 100 {
		t.Errorf("%d of 1000 draws for an answer running at 1,900 run past 1,950; want the tail to carry many", longer)
	}
}
