// Package endpoint is one endpoint's serving machinery for the generate
// stage: the backend that answers, the request slots every instance
// sending to it shares (a fixed concurrency, or auto from latency, the
// server's load metrics and each running request's future), and the
// guards, timeouts and retries that keep a run from waiting on a server
// that will not answer.
package endpoint

import (
	"fmt"
	"sync/atomic"
	"time"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/registry"
	"github.com/eaglet-dev/eaglet/stages/serving/provenance"
)

// Endpoint is a backend shared by every generate instance of a run, with
// the endpoint's concurrency as a cap over all of them together.
type Endpoint struct {
	// Spec is the endpoint as the spec declares it.
	Spec *specs.Endpoint
	// Concurrency is the requests in flight the endpoint takes: the
	// spec's number (64 when it gives none), or with auto the most it
	// may reach.
	Concurrency int
	// Identity is what decides answers: API, model and model settings.
	Identity string
	// MeanTokens is the expected answer length when a dataset gives none;
	// KnowsMean says it is the API's (the simulator's), not a guess.
	MeanTokens int
	KnowsMean  bool
	// TakesIDs is set when the API takes token ids rather than messages
	// (SGLang's /generate, /v1/completions).
	TakesIDs bool
	// Kwargs are the chat_template_kwargs the endpoint's options send with
	// every chat request.
	Kwargs map[string]any
	// OnDown, when set before the first request, hears of each URL the
	// watchdog takes out of service, with why (watchdog.go).
	OnDown func(url string, why error)

	be  backend.Backend
	lim *limiter
	// fatal is set once the endpoint answered that nothing will succeed
	// (credits exhausted, a bad key): no more requests are sent to it.
	fatal atomic.Pointer[backend.Error]
	// downSince is when requests began to find every URL out of service
	// (unix nanoseconds; 0 while one is in).
	downSince atomic.Int64
	// guard stops the endpoint early when going on would waste the run.
	guard guard
	// streams is set when answers stream, so the timeout counts from the
	// last token rather than bounding the whole answer.
	streams bool
	// launched is set when eaglet starts the endpoint's servers itself.
	launched *launched
	// stacks says which serving stack each URL is, for every answer's
	// Served (nil without URLs).
	stacks *provenance.Asker
}

// downFor is how long every URL has been out of service (0: one is in).
func (e *Endpoint) downFor() time.Duration {
	if s := e.downSince.Load(); s != 0 {
		return time.Since(time.Unix(0, s))
	}
	return 0
}

// New builds endpoint ep of spec; logf (nil: quiet) hears about its URLs
// going out of service and coming back.
func New(spec *specs.Spec, ep *specs.Endpoint, logf func(string, ...any)) (*Endpoint, error) {
	e := &Endpoint{Spec: ep, Concurrency: ep.Concurrency.N, MeanTokens: 1000}
	e.guard.logf = logf
	server := pool.Server{URLs: ep.URLs, APIKey: ep.APIKey, Headers: ep.Headers, Model: ep.Model}
	if ep.Launch != nil {
		var err error
		if e.launched, err = newLaunched(spec, ep, logf); err != nil {
			return nil, err
		}
		server.URLs = e.launched.group.URLs()
	}
	if len(server.URLs) > 0 {
		var err error
		cfg := pool.Config{URLs: server.URLs}
		if logf != nil {
			cfg.Log = func(format string, args ...any) { logf("endpoint %s: %s", ep.Name, fmt.Sprintf(format, args...)) }
		}
		if server.Pool, err = pool.New(cfg); err != nil {
			return nil, fmt.Errorf("endpoint %s: %w", ep.Name, err)
		}
		e.guard.pool, e.guard.auth = server.Pool, pool.Auth{APIKey: ep.APIKey, Headers: ep.Headers}
		e.stacks = provenance.New(server.Pool.Client(), e.guard.auth, ep.Model)
	}
	if e.launched != nil {
		e.launched.attach(e, server.Pool)
	}
	maxConc := ep.MaxConcurrency
	if maxConc == 0 {
		maxConc = 1024
	}
	switch {
	case ep.Concurrency.Auto:
		// Start small and let the server's latency say how far to go.
		e.Concurrency = maxConc
		e.lim = newLimiter(min(16, maxConc), maxConc, true)
	case e.Concurrency == 0:
		e.Concurrency = 64
	}
	if e.lim == nil {
		e.lim = newLimiter(e.Concurrency, e.Concurrency, false)
	}
	c, err := registry.New(spec, ep, server)
	if err != nil {
		return nil, err
	}
	e.be, e.Identity, e.TakesIDs, e.Kwargs = c.Backend, c.Identity, c.TakesIDs, c.Kwargs
	e.guard.probePath, e.streams = c.ProbePath, c.Streams
	e.lim.streams = e.streams
	e.watchdog(server.Pool)
	if c.MeanTokens > 0 {
		e.MeanTokens, e.KnowsMean = c.MeanTokens, true
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
// vLLM's; "off" leaves it to latency. A launched endpoint's servers are
// read where its replicas serve at the time, since their ports are known
// only once they are up and change with each restart.
func (e *Endpoint) watchLoad(metrics string, logf func(string, ...any)) {
	if e.lim.auto == nil || metrics == "off" || (len(e.Spec.URLs) == 0 && e.launched == nil) {
		return
	}
	fixed := metricsURLs(e.Spec.URLs)
	urls := func() []string { return fixed }
	if e.launched != nil {
		urls = func() []string { return metricsURLs(e.launched.group.URLs()) }
	}
	named := metrics != ""
	if named {
		urls = func() []string { return []string{metrics} }
	}
	log := func(format string, args ...any) {
		if logf != nil {
			logf("endpoint %s: %s", e.Spec.Name, fmt.Sprintf(format, args...))
		}
	}
	e.lim.watch, e.lim.kv = newLoadWatch(urls, named, loadEvery, log), newKVControl()
}

// AutoConcurrency is the concurrency concurrency: auto has settled on;
// ok is false for a fixed one.
func (e *Endpoint) AutoConcurrency() (n int, ok bool) {
	if e.lim.auto == nil {
		return 0, false
	}
	return e.lim.current(), true
}
