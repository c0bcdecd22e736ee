package generate

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages/generate/backend"
	"github.com/eaglet-dev/eaglet/stages/generate/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/generate/backend/registry"
)

// endpoint is a backend shared by every generate instance of a run, with
// the endpoint's concurrency as a cap over all of them together.
type endpoint struct {
	spec        *specs.Endpoint
	be          backend.Backend
	lim         *limiter
	concurrency int
	// fatal is set once the endpoint answered that nothing will succeed
	// (credits exhausted, a bad key): no more requests are sent to it.
	fatal atomic.Pointer[backend.Error]
	// identity is what decides answers: API, model and model settings.
	identity string
	// meanTokens is the expected answer length when a dataset gives none.
	meanTokens int
	// takesIDs is set when the API takes token ids rather than messages
	// (SGLang's /generate, /v1/completions).
	takesIDs bool
	// kwargs are the chat_template_kwargs the endpoint's options send with
	// every chat request.
	kwargs map[string]any
	// downSince is when requests began to find every URL out of service
	// (unix nanoseconds; 0 while one is in).
	downSince atomic.Int64
	// guard stops the endpoint early when going on would waste the run.
	guard guard
	// streams is set when answers stream, so the timeout counts from the
	// last token rather than bounding the whole answer.
	streams bool
}

// downFor is how long every URL has been out of service (0: one is in).
func (e *endpoint) downFor() time.Duration {
	if s := e.downSince.Load(); s != 0 {
		return time.Since(time.Unix(0, s))
	}
	return 0
}

// newEndpoint builds an endpoint's client; logf (nil: quiet) hears about
// its URLs going out of service and coming back.
func newEndpoint(spec *specs.Spec, ep *specs.Endpoint, logf func(string, ...any)) (*endpoint, error) {
	e := &endpoint{spec: ep, concurrency: ep.Concurrency.N, meanTokens: 1000}
	server := pool.Server{URLs: ep.URLs, APIKey: ep.APIKey, Headers: ep.Headers, Model: ep.Model}
	if len(ep.URLs) > 0 {
		var err error
		cfg := pool.Config{URLs: ep.URLs}
		if logf != nil {
			cfg.Log = func(format string, args ...any) { logf("endpoint %s: %s", ep.Name, fmt.Sprintf(format, args...)) }
		}
		if server.Pool, err = pool.New(cfg); err != nil {
			return nil, fmt.Errorf("endpoint %s: %w", ep.Name, err)
		}
		e.guard.pool, e.guard.auth = server.Pool, pool.Auth{APIKey: ep.APIKey, Headers: ep.Headers}
	}
	maxConc := ep.MaxConcurrency
	if maxConc == 0 {
		maxConc = 1024
	}
	switch {
	case ep.Concurrency.Auto:
		// Start small and let the server's latency say how far to go.
		e.concurrency = maxConc
		e.lim = newLimiter(min(16, maxConc), maxConc, true)
	case e.concurrency == 0:
		e.concurrency = 64
	}
	if e.lim == nil {
		e.lim = newLimiter(e.concurrency, e.concurrency, false)
	}
	c, err := registry.New(spec, ep, server)
	if err != nil {
		return nil, err
	}
	e.be, e.identity, e.takesIDs, e.kwargs = c.Backend, c.Identity, c.TakesIDs, c.Kwargs
	e.guard.probePath, e.streams = c.ProbePath, c.Streams
	if c.MeanTokens > 0 {
		e.meanTokens = c.MeanTokens
	}
	if c.ProbePath != "" { // an API with no server to probe has no metrics either
		e.watchLoad(c.Metrics, logf)
	}
	return e, nil
}

// loadEvery is how often concurrency: auto reads the server's metrics.
const loadEvery = 50 * time.Millisecond

// watchLoad makes concurrency: auto follow the server's load metrics: at
// metrics (a URL), or at the servers' /metrics if they export SGLang's or
// vLLM's; "off" leaves it to latency.
func (e *endpoint) watchLoad(metrics string, logf func(string, ...any)) {
	if e.lim.auto == nil || metrics == "off" || len(e.spec.URLs) == 0 {
		return
	}
	urls, named := metricsURLs(e.spec.URLs), metrics != ""
	if named {
		urls = []string{metrics}
	}
	log := func(format string, args ...any) {
		if logf != nil {
			logf("endpoint %s: %s", e.spec.Name, fmt.Sprintf(format, args...))
		}
	}
	e.lim.watch, e.lim.kv = newLoadWatch(urls, named, loadEvery, log), newKVControl()
}

// errTimedOut cancels a request that gave no sign of life for its timeout.
var errTimedOut = errors.New("request timed out")

// generate sends one request for an instance once the endpoint gives it
// a slot, its share of the endpoint weighted by share.
func (e *endpoint) generate(ctx context.Context, instance string, share float64, req *backend.Request, timeout time.Duration) (*conv.Generation, error) {
	if f := e.fatal.Load(); f != nil {
		return nil, f
	}
	if err := e.probe(ctx, timeout); err != nil {
		return nil, err
	}
	if err := e.lim.acquire(ctx, instance, share); err != nil {
		return nil, err
	}
	if req.Sent != nil {
		req.Sent()
	}
	start := time.Now()
	tokens := 0
	defer func() { e.lim.release(instance, time.Since(start), tokens) }()
	// The timeout counts from the last sign of life: a streamed answer that
	// keeps producing tokens is never cut, however long it runs (a
	// 32k-token reasoning answer at 20 tokens/s takes 27 minutes, and each
	// retry would throw that work away). Without streaming the first sign
	// is the answer, so the timeout bounds the whole request.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchdog := time.AfterFunc(timeout, func() { cancel(errTimedOut) })
	defer watchdog.Stop()
	r := *req
	gaps := e.lim.watchStream()
	var first atomic.Int64
	r.Progress = func(p backend.Progress) {
		watchdog.Reset(timeout)
		gaps.event()
		first.CompareAndSwap(0, time.Now().UnixMilli())
		if req.Progress != nil {
			req.Progress(p)
		}
	}
	var served string
	gen, err := e.be.Generate(pool.WithServed(ctx, &served), &r)
	if err == nil {
		// The report's throughput and in-flight charts are made of these.
		gen.Timing = &conv.Timing{Sent: start.UnixMilli(), FirstToken: first.Load(), Finished: time.Now().UnixMilli(), URL: served}
	}
	var be *backend.Error
	switch {
	case errors.As(err, &be) && be.NotSent:
		e.downSince.CompareAndSwap(0, time.Now().UnixNano())
	case err == nil || errors.As(err, &be) && be.Status > 0:
		// The server answered: it is in service.
		e.downSince.Store(0)
	}
	if context.Cause(ctx) != errTimedOut {
		e.observe(err, be)
	}
	switch {
	case err == nil:
		tokens = gen.CompletionTokens
	case context.Cause(ctx) == errTimedOut:
		msg := fmt.Sprintf("nothing received for %s", timeout)
		if !e.streams && timeout < shortTimeout {
			msg += "; without streaming the timeout bounds the whole answer, so a short one fails the long answers and leaves the kept ones biased short (raise timeout or set stream true)"
		}
		return nil, &backend.Error{Kind: backend.Retryable, Msg: msg}
	default:
		var be *backend.Error
		if errors.As(err, &be) && be.Kind == backend.Fatal {
			e.fatal.CompareAndSwap(nil, &backend.Error{Kind: backend.Fatal, Status: be.Status,
				Msg: fmt.Sprintf("endpoint %s stopped: %s", e.spec.Name, be.Msg)})
		}
	}
	return gen, err
}

// limits turns budget options (already resolved) into limits priced with
// this endpoint's prices.
func (e *endpoint) limits(o *BudgetOptions) ([]*limit, error) {
	for name, x := range map[string]specs.Expr{"completion_tokens": o.CompletionTokens, "total_tokens": o.TotalTokens, "samples": o.Samples, "dollars": o.Dollars} {
		switch x.Value().(type) {
		case nil, int, int64, float64:
		default:
			return nil, fmt.Errorf("budget %s is %q; it must be a number", name, fmt.Sprint(x.Value()))
		}
	}
	var out []*limit
	zero := func(int) float64 { return 0 }
	if !o.CompletionTokens.IsZero() {
		out = append(out, &limit{name: "completion_tokens", max: o.CompletionTokens.Float(), fixed: zero, perToken: 1})
	}
	if !o.TotalTokens.IsZero() {
		out = append(out, &limit{name: "total_tokens", max: o.TotalTokens.Float(), fixed: func(p int) float64 { return float64(p) }, perToken: 1})
	}
	if !o.Samples.IsZero() {
		out = append(out, &limit{name: "samples", max: o.Samples.Float(), fixed: zero})
	}
	if !o.Dollars.IsZero() && e.spec.Price != nil {
		in, outp := e.spec.Price.Input/1e6, e.spec.Price.Output/1e6
		out = append(out, &limit{name: "dollars", max: o.Dollars.Float(), fixed: func(p int) float64 { return float64(p) * in }, perToken: outp})
	}
	return out, nil
}
