package server

import (
	"context"
	"errors"
	"sync"
	"time"
)

// The scheduler imitates a continuous-batching server such as SGLang:
// sequences wait in a queue, are admitted while the running batch has room
// in sequences and in KV-cache tokens (keeping a reserve for the tokens the
// running ones are still expected to produce), decode together at a speed
// that drops as the batch grows, and are retracted, newest first, when the
// cache overflows. A retracted sequence keeps its output but must prefill
// prompt and output again when re-admitted: that recomputation is the cost
// the accounting reports.
type scheduler struct {
	cfg  Config
	mu   sync.Mutex
	wake chan struct{}
	quit chan struct{}

	queue   []*seq
	running []*seq
	// ratio is the share of a running sequence's remaining max tokens
	// reserved at admission; it decays while nothing is retracted.
	ratio       float64
	peak        int
	retractions int64
	recomputed  int64
}

// Reserve ratios, as SGLang's init/min new_token_ratio.
const (
	initRatio  = 0.7
	minRatio   = 0.1
	ratioDecay = (initRatio - minRatio) / 600
	tick       = 5 * time.Millisecond
)

type seq struct {
	prompt, total, maxTokens int
	produced                 float64 // decoded tokens
	prefill                  float64 // tokens to prefill before decoding resumes
	done                     bool
	notify                   chan struct{}
}

var errClosed = errors.New("sim server: shutting down")

func newScheduler(cfg Config) *scheduler {
	s := &scheduler{cfg: cfg, wake: make(chan struct{}, 1), quit: make(chan struct{}), ratio: initRatio}
	go s.loop()
	return s
}

func (s *scheduler) close() { close(s.quit) }

// wait queues a sequence and calls emit with the number of tokens produced
// each time it grows, until all total are out.
func (s *scheduler) wait(ctx context.Context, prompt, total, maxTokens int, emit func(n int) error) error {
	q := &seq{prompt: prompt, total: total, maxTokens: max(maxTokens, total), notify: make(chan struct{}, 1)}
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
	s.running = without(s.running, q)
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
	s.admit()
	speed := s.cfg.Speed
	if s.cfg.MaxRunning > 0 {
		speed /= 1 + s.cfg.Slowdown*float64(len(s.running))/float64(s.cfg.MaxRunning)
	}
	kept := s.running[:0]
	for _, q := range s.running {
		budget := dt
		if q.prefill > 0 {
			if s.cfg.PrefillSpeed > 0 {
				use := min(budget, q.prefill/s.cfg.PrefillSpeed)
				q.prefill -= use * s.cfg.PrefillSpeed
				budget -= use
			} else {
				q.prefill = 0
			}
		}
		before := int(q.produced)
		q.produced = min(float64(q.total), q.produced+speed*budget)
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
	s.running = kept
	for s.cfg.KVTokens > 0 && s.kvUsed() > s.cfg.KVTokens && len(s.running) > 1 {
		q := s.running[len(s.running)-1]
		s.running = s.running[:len(s.running)-1]
		q.prefill = float64(q.prompt) + q.produced
		s.recomputed += int64(q.prefill)
		s.retractions++
		s.queue = append([]*seq{q}, s.queue...)
		s.ratio = min(1, s.ratio+0.1)
	}
	s.ratio = max(minRatio, s.ratio-ratioDecay)
	s.admit()
}

// admit moves queued sequences into the batch while they fit.
func (s *scheduler) admit() {
	used, reserve := s.kvUsed(), 0.0
	for _, q := range s.running {
		reserve += s.ratio * q.left()
	}
	for len(s.queue) > 0 {
		q := s.queue[0]
		if s.cfg.MaxRunning > 0 && len(s.running) >= s.cfg.MaxRunning {
			break
		}
		need := q.prompt + int(q.produced)
		extra := s.ratio * q.left()
		if s.cfg.KVTokens > 0 && len(s.running) > 0 && float64(used+need)+reserve+extra > float64(s.cfg.KVTokens) {
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

// clipEstimate caps the tokens a sequence is expected to still produce, as
// SGLang's SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION (4096) does, so a request
// with a max of 32k does not reserve 32k. It is also why SGLang retracts:
// answers longer than the clipped reserve overflow the cache.
const clipEstimate = 4096

// left is the reserve a running sequence's remaining output is given.
func (q *seq) left() float64 {
	return float64(min(q.maxTokens-int(q.produced), clipEstimate))
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
		KVUsed: s.kvUsed(), Retractions: s.retractions, RecomputedTokens: s.recomputed,
	}
}
