package endpoint

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eaglet-dev/eaglet/stages/serving/answerlen"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
)

// limiter hands out an endpoint's request slots. Instances (one per
// dataset) wait in their own queues and a freed slot goes to the instance
// with the fewest requests in flight for its weight, so every dataset
// progresses at once and none waits for another. The capacity is fixed, or
// adapts to the server (concurrency: auto).
type limiter struct {
	mu       sync.Mutex
	limit    float64
	max      int
	inflight int
	groups   map[string]*group
	auto     *gradient
	// watch and kv, when set, adapt an auto limit to the server's own
	// load metrics; the gradient stands in while the server has none.
	// Both hand over to predict once it can decide.
	watch     *loadWatch
	kv        *kvControl
	completed int
	// startSum adds up when the requests in flight were granted (seconds
	// since start), for their mean age.
	startSum float64
	start    time.Time
	// now is the clock: time.Now, or a simulated one in benchmarks that
	// step a virtual server (BenchmarkAutoVirtual).
	now func() time.Time
	// queued counts the waiters of every group: with none, a free slot is
	// granted on the spot.
	queued int
	// predict, set with auto, decides by each request's future once
	// enough answers have ended and the cache's size is known (capacity:
	// from the server's metrics, or the cache the client counted when a
	// preemption showed). flights are the requests in flight it follows,
	// streams whether their tokens are streamed (else they are estimated
	// from their age), pace what a character and a second are worth in
	// tokens, overhead the prompt tokens a request holds and newMax the
	// max_tokens of the latest request.
	predict  *kvPredict
	flights  map[*streamGaps]struct{}
	streams  bool
	pace     answerlen.Pace
	capacity float64
	overhead float64
	newMax   float64
	// held logs the tokens the client counted in flight at each release,
	// the last heldLog of them, to look up what the cache held when a
	// stream that went silent stopped.
	held []heldAt
	// stalls are the levels of the last silences that could teach the
	// cache's size.
	stalls []heldAt
	// decided is when the predictor last decided, and predLimit what.
	decided   time.Time
	predLimit float64
}

type heldAt struct {
	at     time.Time
	tokens float64
}

const heldLog = 512

type group struct {
	weight   float64
	inflight int
	waiters  []*waiter
}

type waiter struct {
	ch      chan struct{}
	granted bool
}

func newLimiter(limit, max int, auto bool) *limiter {
	l := &limiter{limit: float64(limit), max: max, groups: map[string]*group{}, now: time.Now, pace: answerlen.NewPace()}
	l.start = l.now()
	if auto {
		l.auto = &gradient{probing: true}
		l.predict = newKVPredict(1)
		l.flights = map[*streamGaps]struct{}{}
	}
	return l
}

func (l *limiter) group(name string, weight float64) *group {
	g := l.groups[name]
	if g == nil {
		g = &group{weight: weight}
		l.groups[name] = g
	}
	if weight > 0 {
		g.weight = weight
	}
	return g
}

// acquire waits for a slot for the named group.
func (l *limiter) acquire(ctx context.Context, name string, weight float64) error {
	l.mu.Lock()
	g := l.group(name, weight)
	if l.queued == 0 && l.inflight < max(int(l.limit), 1) {
		// Nobody waits and a slot is free: the slot is this request's, with
		// no waiter or channel made for it (two allocations a request, and
		// a wake-up, at thousands of requests a second).
		l.grant(g)
		if l.watch != nil {
			l.watch.poll(l.useLoad)
		}
		l.mu.Unlock()
		return nil
	}
	w := &waiter{ch: make(chan struct{})}
	g.waiters = append(g.waiters, w)
	l.queued++
	l.dispatch()
	if l.watch != nil {
		l.watch.poll(l.useLoad)
	}
	l.mu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		if w.granted {
			if l.kv != nil {
				// Granted as it gave up: it was just now.
				l.startSum -= l.now().Sub(l.start).Seconds()
			}
			l.releaseLocked(g)
			return ctx.Err()
		}
		for i, x := range g.waiters {
			if x == w {
				g.waiters = append(g.waiters[:i], g.waiters[i+1:]...)
				l.queued--
				break
			}
		}
		return ctx.Err()
	}
}

// release frees a slot; took and tokens describe the finished request, for
// the adaptive limit (tokens 0: nothing learned).
func (l *limiter) release(name string, took time.Duration, tokens int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.kv != nil {
		l.startSum -= l.now().Sub(l.start).Seconds() - took.Seconds()
	}
	if l.auto != nil && tokens > 0 {
		l.completed++
		if l.kv != nil {
			l.kv.finished(took.Seconds())
		}
		l.predict.lengths.Add(float64(tokens))
		l.pace.LearnTime(tokens, took)
		now := l.now()
		if len(l.held) == heldLog {
			l.held = append(l.held[:0], l.held[heldLog/2:]...)
		}
		l.held = append(l.held, heldAt{now, l.heldNow(now, 0)})
		if l.watch == nil || !l.watch.poll(l.useLoad) {
			l.limit = l.auto.observe(l.limit, float64(l.max), took.Seconds(), float64(tokens))
		}
		l.predicted(1)
	}
	l.releaseLocked(l.groups[name])
}

// stalled hears that a streamed answer went silent while running, from
// since until now, while others went on streaming when corroborated. With
// the server's metrics read, their preemption count says it better.
func (l *limiter) stalled(since time.Time, corroborated bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.auto == nil || (l.watch != nil && !l.watch.isOff()) {
		return
	}
	l.limit = l.auto.stalled(l.limit)
	if !corroborated {
		// Every stream paused at once: the client's machine or the
		// network, not a preemption, which silences one answer.
		return
	}
	// The server ran out of cache when the answer went silent: what the
	// client counted in flight then is its size, near enough. A cache
	// does not overflow well below what it held before without one, so
	// a silence at such a level is something else (the client's machine
	// starved one stream), and so is one level seen once: the size is
	// taken from two silences at least half a second apart at levels
	// within a tenth of each other, the lower.
	i, _ := slices.BinarySearchFunc(l.held, since, func(h heldAt, t time.Time) int { return h.at.Compare(t) })
	if i == len(l.held) {
		return
	}
	h, most := l.held[i], 0.0
	for _, x := range l.held[:i] {
		most = math.Max(most, x.tokens)
	}
	if h.tokens < 0.9*most {
		return
	}
	for _, c := range l.stalls {
		if h.at.Sub(c.at).Abs() >= stallsApart && math.Abs(h.tokens-c.tokens) <= 0.1*math.Max(h.tokens, c.tokens) {
			if size := math.Min(h.tokens, c.tokens); l.capacity == 0 || size < l.capacity {
				l.capacity = size
			}
		}
	}
	if len(l.stalls) == 8 {
		l.stalls = l.stalls[1:]
	}
	l.stalls = append(l.stalls, h)
	l.predicted(0)
}

// stallsApart is how far apart two silences must be to be two overflows.
const stallsApart = 500 * time.Millisecond

// heldNow is the cache the client counts in flight: prompts and the
// tokens produced, less leaving requests being released.
func (l *limiter) heldNow(now time.Time, leaving int) float64 {
	held := 0.0
	for _, f := range l.flightStates(now, leaving) {
		held += l.overhead + f.tokens
	}
	return held
}

// predicted sets the limit to the requests in flight (less leaving, one
// being released) and as many more as the predictor finds room for; it
// reports false, leaving the limit, until the predictor can decide.
func (l *limiter) predicted(leaving int) bool {
	if l.predict == nil || l.capacity <= 0 {
		return false
	}
	if !l.decided.IsZero() && l.now().Sub(l.decided) < predictEvery {
		l.limit = l.predLimit
		return true
	}
	st := kvState{capacity: l.capacity, overhead: l.overhead, flights: l.flightStates(l.now(), leaving)}
	if !l.predict.ready(st.flights) {
		return false
	}
	l.decided = l.now()
	room := l.predict.room(st, l.newMax, predictMaxStep)
	l.limit = math.Max(1, math.Min(float64(l.max), float64(len(st.flights)+room)))
	l.predLimit = l.limit
	return true
}

// flightStates lists the requests in flight: those followed with their
// tokens, and those granted a slot but not yet sent as new ones. They are
// sorted, so a decision depends on the requests and not on the map's
// order (a benchmark in virtual time repeats exactly).
func (l *limiter) flightStates(now time.Time, leaving int) []inFlight {
	out := make([]inFlight, 0, l.inflight)
	for f := range l.flights {
		out = append(out, inFlight{tokens: f.progress(now, l.streams, &l.pace), maxTokens: f.maxTokens})
	}
	slices.SortFunc(out, func(a, b inFlight) int {
		return cmp.Or(cmp.Compare(a.tokens, b.tokens), cmp.Compare(a.maxTokens, b.maxTokens))
	})
	for range l.inflight - leaving - len(l.flights) {
		out = append(out, inFlight{maxTokens: l.newMax})
	}
	return out
}

// streamGaps follows one request in flight for an auto limit: how many
// tokens it has produced, for the predictor, and its stream going silent
// while it runs, as a preempted request does while it waits to be
// re-admitted and recomputed.
type streamGaps struct {
	l         *limiter
	start     time.Time
	maxTokens float64
	// tokens and chars are the request's backend.Progress; lastEvent is
	// when it last streamed (Unix nanoseconds), read by other requests'
	// stalls.
	tokens, chars, lastEvent atomic.Int64
	exact                    atomic.Bool
	last                     time.Time
	mean                     float64
	n                        int
	told                     bool
}

// watchStream returns a watch for one request, sent now with maxTokens
// (nil unless the limit is auto); end must be called when it is over.
func (l *limiter) watchStream(maxTokens int) *streamGaps {
	if l.auto == nil {
		return nil
	}
	now := l.now()
	s := &streamGaps{l: l, start: now, last: now, maxTokens: float64(maxTokens)}
	l.mu.Lock()
	l.flights[s] = struct{}{}
	l.newMax = float64(maxTokens)
	l.mu.Unlock()
	return s
}

// end stops following the request; prompt and completion are its
// tokens (0: failed or unknown), prompt learned as every request's share
// of the cache, completion as what its text was worth.
func (s *streamGaps) end(prompt, completion int) {
	if s == nil {
		return
	}
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	delete(s.l.flights, s)
	if prompt > 0 {
		s.l.overhead += (float64(prompt) - s.l.overhead) / 20
	}
	if completion > 0 {
		s.l.pace.LearnText(int(s.chars.Load()), completion)
	}
}

// progress estimates the tokens the request has produced: as counted, or
// from its text when the stream does not count them; without streaming,
// from its age.
func (s *streamGaps) progress(now time.Time, streamed bool, pc *answerlen.Pace) float64 {
	n := int(s.tokens.Load())
	switch {
	case s.exact.Load():
	case streamed:
		n = max(n, pc.TokensOf(int(s.chars.Load())))
	default:
		n = pc.TokensIn(now.Sub(s.start))
	}
	return math.Min(s.maxTokens, float64(n))
}

// event records a stream event and what the answer has shown so far; a
// gap twenty times the usual one (and over 100 ms) is a stall, told once
// per request.
func (s *streamGaps) event(p backend.Progress) {
	if s == nil {
		return
	}
	s.tokens.Store(int64(p.Tokens))
	s.chars.Store(int64(p.Chars))
	s.exact.Store(p.Exact)
	now := s.l.now()
	gap := now.Sub(s.last).Seconds()
	since := s.last
	s.last = now
	s.lastEvent.Store(now.UnixNano())
	if s.n >= 5 && !s.told && gap > math.Max(20*s.mean, 0.1) {
		s.told = true
		s.l.stalled(since, s.othersStreamed(since, now))
	}
	s.n++
	s.mean += (gap - s.mean) / float64(min(s.n, 20))
}

// othersStreamed says whether most other requests in flight streamed in
// the second half of this one's silence from since to now.
func (s *streamGaps) othersStreamed(since, now time.Time) bool {
	mid := since.Add(now.Sub(since) / 2).UnixNano()
	s.l.mu.Lock()
	defer s.l.mu.Unlock()
	others, went := 0, 0
	for f := range s.l.flights {
		if f == s {
			continue
		}
		others++
		if f.lastEvent.Load() > mid {
			went++
		}
	}
	return others >= 2 && 2*went > others
}

// useLoad sets the limit from a reading of the server's load.
func (l *limiter) useLoad(ld serverLoad) {
	l.mu.Lock()
	defer l.mu.Unlock()
	age := 0.0
	if l.inflight > 0 {
		age = l.now().Sub(l.start).Seconds() - l.startSum/float64(l.inflight)
	}
	l.limit = l.kv.next(l.limit, float64(l.max), l.completed, age, ld)
	l.completed = 0
	switch {
	case ld.capacity > 0:
		l.capacity = ld.capacity
	case ld.usage > 0.2 && ld.queued == 0:
		// The size is not exported (vLLM): what the client counts in
		// flight over the share of the cache in use says it.
		est := l.heldNow(l.now(), 0) / ld.usage
		if l.capacity == 0 {
			l.capacity = est
		}
		l.capacity += (est - l.capacity) / 10
	}
	l.predicted(0)
	l.dispatch()
}

func (l *limiter) releaseLocked(g *group) {
	l.inflight--
	g.inflight--
	l.dispatch()
}

// dispatch grants free slots, each to the waiting group furthest below
// its weighted share.
func (l *limiter) dispatch() {
	for l.queued > 0 && l.inflight < max(int(l.limit), 1) {
		var best *group
		for _, g := range l.groups {
			if len(g.waiters) == 0 {
				continue
			}
			if best == nil || float64(g.inflight+1)/g.weight < float64(best.inflight+1)/best.weight {
				best = g
			}
		}
		if best == nil {
			return
		}
		w := best.waiters[0]
		best.waiters = best.waiters[1:]
		l.queued--
		w.granted = true
		l.grant(best)
		close(w.ch)
	}
}

// grant counts a slot as the group's.
func (l *limiter) grant(g *group) {
	g.inflight++
	l.inflight++
	if l.kv != nil {
		l.startSum += l.now().Sub(l.start).Seconds()
	}
}

// current returns the capacity in force.
func (l *limiter) current() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return max(int(l.limit), 1)
}
