package generate

import (
	"context"
	"fmt"
	"time"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages/conv"
	"github.com/eaglet-dev/eaglet/stages/generate/backend"
	"github.com/eaglet-dev/eaglet/stages/generate/backend/simapi"
	"github.com/eaglet-dev/eaglet/stages/generate/sim"
)

// endpoint is a backend shared by every generate instance of a run, with
// the endpoint's concurrency as a cap over all of them together.
type endpoint struct {
	spec        *specs.Endpoint
	be          backend.Backend
	slots       chan struct{}
	concurrency int
	// identity is what decides answers: API, model and model settings.
	identity string
	// meanTokens is the expected answer length when a dataset gives none.
	meanTokens int
}

// SimOptions are the `options:` of an `api: sim` endpoint.
type SimOptions struct {
	Seed         uint64  `yaml:"seed"`
	MeanTokens   int     `yaml:"mean_tokens"`
	Sigma        float64 `yaml:"sigma"`
	MaxLen       int     `yaml:"max_len"`
	Reasoning    float64 `yaml:"reasoning"`
	Context      int     `yaml:"context"`
	ToolCallRate float64 `yaml:"tool_call_rate"`
	// Speed is tokens per second per request (0: instant).
	Speed float64 `yaml:"speed"`
}

func newEndpoint(spec *specs.Spec, ep *specs.Endpoint) (*endpoint, error) {
	e := &endpoint{spec: ep, concurrency: ep.Concurrency, meanTokens: 1000}
	if e.concurrency == 0 {
		e.concurrency = 64
	}
	switch ep.API {
	case "sim":
		var o SimOptions
		if err := spec.Decode(ep.Options, &o); err != nil {
			return nil, err
		}
		m := sim.New(sim.Config{Seed: o.Seed, MeanTokens: o.MeanTokens, Sigma: o.Sigma, MaxLen: o.MaxLen,
			Reasoning: o.Reasoning, Context: o.Context, ToolCallRate: o.ToolCallRate})
		name := ep.Model
		if name == "" {
			name = "sim"
		}
		e.be = simapi.New(m, simapi.Config{Name: name, Speed: o.Speed})
		c := m.Config()
		e.meanTokens = c.MeanTokens
		e.identity = fmt.Sprintf("sim|%s|%+v", name, c)
	default:
		return nil, fmt.Errorf("endpoint %s: api %s is not available in this build", ep.Name, ep.API)
	}
	e.slots = make(chan struct{}, e.concurrency)
	return e, nil
}

// generate sends one request once a slot of the endpoint is free.
func (e *endpoint) generate(ctx context.Context, req *backend.Request, timeout time.Duration) (*conv.Generation, error) {
	select {
	case e.slots <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-e.slots }()
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	gen, err := e.be.Generate(ctx, req)
	if err != nil && ctx.Err() == context.DeadlineExceeded {
		return nil, &backend.Error{Kind: backend.Retryable, Msg: fmt.Sprintf("no answer within %s", timeout)}
	}
	return gen, err
}
