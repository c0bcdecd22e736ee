package server

// Virtual is the scheduler on a caller's clock, without HTTP or wall
// time: benchmarks drive it to study how clients admit requests in
// simulated seconds, deterministically: BenchmarkSchedulerFrontier here
// (fixed and oracle clients, a thousand times faster than the server
// runs) and BenchmarkAutoVirtual in stages/serving/endpoint (eaglet's
// concurrency: auto deciding on a clock the benchmark steps, a run in at
// most 3 s where BenchmarkScheduling's takes 40 s over HTTP). It is not
// safe for concurrent use.
type Virtual struct{ s *scheduler }

// NewVirtual returns a scheduler of cfg's Speed, PrefillSpeed, KVTokens,
// MaxRunning, Slowdown and ClipEstimate (4096 when 0), with nothing sent.
func NewVirtual(cfg Config) *Virtual {
	if cfg.ClipEstimate <= 0 {
		cfg.ClipEstimate = 4096
	}
	return &Virtual{s: &scheduler{cfg: cfg, ratio: initRatio}}
}

// VirtualRequest is a request sent to a Virtual scheduler.
type VirtualRequest struct{ q *seq }

// Send queues a request whose prompt holds prompt tokens and whose answer
// runs total tokens (at most maxTokens); the next Step may admit it.
func (v *Virtual) Send(prompt, total, maxTokens int) *VirtualRequest {
	q := &seq{prompt: prompt, total: min(total, maxTokens), maxTokens: maxTokens}
	v.s.queue = append(v.s.queue, q)
	return &VirtualRequest{q}
}

// Step advances the clock by seconds: admission, prefill, decode and
// retraction, as one tick of the server's loop.
func (v *Virtual) Step(seconds float64) { v.s.step(seconds) }

// Stats returns the scheduler's counters (an HTTP server's Requests,
// Completed and CompletionTokens stay 0).
func (v *Virtual) Stats() Stats { return v.s.stats() }

// Tokens is how many tokens the answer has so far, as a stream shows them.
func (r *VirtualRequest) Tokens() float64 { return r.q.produced }

// Done reports whether the whole answer is out.
func (r *VirtualRequest) Done() bool { return r.q.done }

// Prompt is the request's prompt tokens.
func (r *VirtualRequest) Prompt() int { return r.q.prompt }

// Total is the answer's length in tokens, known to an oracle only.
func (r *VirtualRequest) Total() int { return r.q.total }
