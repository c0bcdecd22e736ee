package sglang

import (
	"fmt"

	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/registry"
)

// Options are the `options:` of an `api: sglang` endpoint (native /generate).
type Options struct {
	registry.ServerOptions `yaml:",inline"`
	// SamplingParams are extra sampling_params sent with every request.
	SamplingParams map[string]any `yaml:"sampling_params" doc:"extra sampling_params sent with every request"`
}

func init() {
	registry.Register(registry.API[Options]{Name: "sglang", NeedsURLs: true,
		Summary: "SGLang's native /generate: token ids from a tokenize stage in, token ids out", New: newClient})
}

func newClient(srv pool.Server, o *Options) (*registry.Client, error) {
	c, err := New(Config{Server: o.Server(srv), Stream: o.Stream, SamplingParams: o.SamplingParams})
	if err != nil {
		return nil, err
	}
	return &registry.Client{Backend: c, TakesIDs: true, Identity: fmt.Sprintf("sglang|%s|%v", srv.Model, o.SamplingParams),
		ProbePath: "/health", Streams: o.Stream, Metrics: o.Metrics}, nil
}
