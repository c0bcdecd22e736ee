package server

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"sync"
	"time"
)

// The scheduler imitates SGLang's: sequences wait in a queue and are
// admitted while the running batch has room in sequences and in KV-cache
// tokens, decode together at a speed that drops as the batch grows, and are
// retracted when decode runs out of cache. Admission reserves room for the
// tokens sequences are still to produce: a new one its whole (clipped)
// max_new_tokens, a running one that times the new-token ratio, which starts
// at 0.7 and decays to 0.098 over 600 decode steps while nothing is
// retracted. The ratio bets that answers end short; long answers lose that
// bet, the cache overflows, and the sequences with the least output are
// retracted (at least one) until the rest have room for their next token,
// after which the ratio is re-estimated from the survivors. A retracted
// sequence joins the back of the queue, keeps its output, and must prefill
// prompt and output again when re-admitted: that recomputation is the cost
// the accounting reports. Once admission stops for want of room, nothing
// more is admitted until the batch shrinks (a sequence ends or is
// retracted), as SGLang's batch_is_full does.
type scheduler struct {
	cfg  Config
	mu   sync.Mutex
	wake chan struct{}
	quit chan struct{}

	queue   []*seq
	running []*seq
	// ratio is SGLang's new_token_ratio.
	ratio float64
	// full is SGLang's batch_is_full: admission found no room, and is not
	// tried again until the batch shrinks.
	full        bool
	peak        int
	retractions int64
	recomputed  int64
}

// SGLang's defaults: SGLANG_INIT_NEW_TOKEN_RATIO 0.7, a minimum of 0.14
// of it, SGLANG_NEW_TOKEN_RATIO_DECAY_STEPS 600 (scheduler.py,
// init_new_token_ratio), global_config.retract_decode_steps 20, which only
// enters the ratio re-estimated after a retraction (schedule_batch.py,
// retract_decode's new_estimate_ratio).
const (
	initRatio    = 0.7
	minRatio     = initRatio * 0.14
	ratioDecay   = (initRatio - minRatio) / 600
	retractSteps = 20
	tick         = 5 * time.Millisecond
)

type seq struct {
	prompt, total, maxTokens int
	// pace is the tokens a decode step yields on average, more than 1
	// with a drafter; 0 is 1, a token a step.
	pace     float64
	produced float64 // decoded tokens
	prefill  float64 // tokens to prefill before decoding resumes
	done     bool
	notify   chan struct{}
}

func (q *seq) tokensPerStep() float64 {
	if q.pace == 0 {
		return 1
	}
	return q.pace
}

var errClosed = errors.New("sim server: shutting down")

func newScheduler(cfg Config) *scheduler {
	s := &scheduler{cfg: cfg, wake: make(chan struct{}, 1), quit: make(chan struct{}), ratio: initRatio}
	go s.loop()
	return s
}

func (s *scheduler) close() { close(s.quit) }

// wait queues a sequence decoding pace tokens a step and calls emit with
// the number of tokens produced each time it grows, until all total are
// out.
func (s *scheduler) wait(ctx context.Context, prompt, total, maxTokens int, pace float64, emit func(n int) error) error {
	q := &seq{prompt: prompt, total: total, maxTokens: max(maxTokens, total), pace: pace, notify: make(chan struct{}, 1)}
	s.mu.Lock()
	s.queue = append(s.queue, q)
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
	defer s.remove(q)
	sent := 0
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-s.quit:
			return errClosed
		case <-q.notify:
		}
		s.mu.Lock()
		n, done := int(q.produced), q.done
		s.mu.Unlock()
		if done {
			n = total
		}
		if n > sent && (n-sent >= s.cfg.StreamInterval || done) {
			if err := emit(n); err != nil {
				return err
			}
			sent = n
		}
		if done {
			return nil
		}
	}
}

// remove drops a sequence whose client has gone, freeing its cache.
func (s *scheduler) remove(q *seq) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.queue = without(s.queue, q)
	if n := len(s.running); len(without(s.running, q)) < n {
		// An aborted request leaves the batch as a finished one does.
		s.running = s.running[:n-1]
		s.full = false
	}
}

func without(list []*seq, q *seq) []*seq {
	for i, x := range list {
		if x == q {
			return append(list[:i], list[i+1:]...)
		}
	}
	return list
}

func (s *scheduler) loop() {
	t := time.NewTicker(tick)
	defer t.Stop()
	last := time.Now()
	for {
		s.mu.Lock()
		idle := len(s.queue) == 0 && len(s.running) == 0
		s.mu.Unlock()
		if idle {
			select {
			case <-s.quit:
				return
			case <-s.wake:
				last = time.Now()
			}
		}
		select {
		case <-s.quit:
			return
		case <-t.C:
			// The clock, not the tick's own time: a tick buffered while
			// the server sat idle is stale, and stepping by it once made
			// the first answers after a pause arrive at 40 times the speed.
			now := time.Now()
			s.step(now.Sub(last).Seconds())
			last = now
		}
	}
}

// step advances every running sequence by dt seconds of work.
func (s *scheduler) step(dt float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.schedule()
	speed := s.cfg.Speed
	if s.cfg.MaxRunning > 0 {
		speed /= 1 + s.cfg.Slowdown*float64(len(s.running))/float64(s.cfg.MaxRunning)
	}
	// Prefill goes first, as in SGLang without mixed chunks: while the
	// batch prefills new or retracted sequences, nothing decodes.
	budget := dt
	for _, q := range s.running {
		if q.prefill <= 0 {
			continue
		}
		if s.cfg.PrefillSpeed <= 0 {
			q.prefill = 0
			continue
		}
		use := min(budget, q.prefill/s.cfg.PrefillSpeed)
		q.prefill -= use * s.cfg.PrefillSpeed
		budget -= use
	}
	kept := s.running[:0]
	for _, q := range s.running {
		before := int(q.produced)
		if q.prefill <= 1e-9 {
			q.prefill = 0
			q.produced = min(float64(q.total), q.produced+speed*q.tokensPerStep()*budget)
		}
		if q.produced >= float64(q.total) {
			q.done = true
		}
		if q.done || int(q.produced) > before {
			signal(q)
		}
		if !q.done {
			kept = append(kept, q)
		}
	}
	if len(kept) < len(s.running) {
		// update_running_batch: a batch that shrank may admit again.
		s.full = false
	}
	s.running = kept
	switch {
	case len(s.running) == 0:
		// SGLang resets the ratio when the batch runs dry.
		s.ratio = initRatio
	case s.cfg.KVTokens > 0 && s.kvUsed() > s.cfg.KVTokens && len(s.running) > 1:
		s.retract()
	default:
		// One decay per decode step: a step is one token of each sequence.
		s.ratio = max(minRatio, s.ratio-ratioDecay*speed*budget)
	}
	s.schedule()
}

// schedule admits from the queue unless the last try found the batch full
// and it has not shrunk since (get_new_batch_prefill returns at once while
// running_batch.batch_is_full).
func (s *scheduler) schedule() {
	if !s.full || len(s.running) == 0 {
		s.admit()
	}
}

// retract frees the cache as SGLang's retract_decode does
// (python/sglang/srt/managers/schedule_batch.py): the sequences with the
// least output go first (the longest prompt first among equals), at least
// one, then more while the rest have no room for their next token
// (check_decode_mem: one token a sequence); each joins the back of the
// waiting queue (scheduler.py, _extend_requests_to_queue: waiting_queue.extend;
// the default fcfs policy does not reorder it). The ratio is then
// re-estimated from what the rest have produced, with 20 steps of headroom.
func (s *scheduler) retract() {
	slices.SortStableFunc(s.running, func(a, b *seq) int {
		if c := cmp.Compare(int(b.produced), int(a.produced)); c != 0 {
			return c
		}
		return cmp.Compare(a.prompt, b.prompt)
	})
	for first := true; len(s.running) > 1 && (first || s.kvUsed()+len(s.running) > s.cfg.KVTokens); first = false {
		q := s.running[len(s.running)-1]
		s.running = s.running[:len(s.running)-1]
		q.prefill = float64(q.prompt) + q.produced
		s.recomputed += int64(q.prefill)
		s.retractions++
		s.queue = append(s.queue, q)
	}
	s.full = false
	decoded, maxNew := 0, 0
	for _, q := range s.running {
		decoded += int(q.produced)
		maxNew += q.maxTokens
	}
	s.ratio = min(1, float64(decoded+retractSteps*len(s.running))/float64(maxNew+1))
}

// admit moves queued sequences into the batch while they fit: a running
// sequence reserves the ratio of what it may still produce, one admitted
// now all of it (clipped), as SGLang's PrefillAdder does.
func (s *scheduler) admit() {
	used, reserve := s.kvUsed(), 0.0
	for _, q := range s.running {
		reserve += s.ratio * s.left(q)
	}
	for len(s.queue) > 0 {
		q := s.queue[0]
		if s.cfg.MaxRunning > 0 && len(s.running) >= s.cfg.MaxRunning {
			s.full = true
			break
		}
		need := q.prompt + int(q.produced)
		extra := s.left(q)
		if s.cfg.KVTokens > 0 && len(s.running) > 0 && float64(used+need)+reserve+extra > float64(s.cfg.KVTokens) {
			// PrefillAdder.add_one_req's NO_TOKEN.
			s.full = true
			break
		}
		s.queue = s.queue[1:]
		if q.prefill == 0 {
			q.prefill = float64(q.prompt)
		}
		s.running = append(s.running, q)
		used += need
		reserve += extra
	}
	s.peak = max(s.peak, len(s.running))
}

// left is the reserve a running sequence's remaining output is given,
// clipped as SGLang's SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION does, so a
// request with a max of 32k does not reserve 32k. The clip is also why
// SGLang retracts: answers longer than the clipped reserve overflow the
// cache.
func (s *scheduler) left(q *seq) float64 {
	return float64(min(q.maxTokens-int(q.produced), s.cfg.ClipEstimate))
}

func (s *scheduler) kvUsed() int {
	n := 0
	for _, q := range s.running {
		n += q.prompt + int(q.produced)
	}
	return n
}

func signal(q *seq) {
	select {
	case q.notify <- struct{}{}:
	default:
	}
}

func (s *scheduler) stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	return Stats{
		Running: len(s.running), Queued: len(s.queue), PeakRunning: s.peak,
		KVUsed: s.kvUsed(), Retractions: s.retractions, RecomputedTokens: s.recomputed, NewTokenRatio: s.ratio,
	}
}
