package generate

import (
	"fmt"
	"sync/atomic"
	"time"

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
	// meanTokens is the expected answer length when a dataset gives none;
	// knowsMean says it is the API's (the simulator's), not a guess.
	meanTokens int
	knowsMean  bool
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
	e.guard.logf = logf
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
	e.lim.streams = e.streams
	if c.MeanTokens > 0 {
		e.meanTokens, e.knowsMean = c.MeanTokens, true
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
