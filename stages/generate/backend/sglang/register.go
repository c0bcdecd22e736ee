package sglang

import (
	"fmt"

	"github.com/eaglet-dev/eaglet/stages/generate/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/generate/backend/registry"
)

// Options are the `options:` of an `api: sglang` endpoint (native /generate).
type Options struct {
	Stream bool `yaml:"stream" doc:"stream answers, so the budget sees running answers grow"`
	// SamplingParams are extra sampling_params sent with every request.
	SamplingParams map[string]any `yaml:"sampling_params" doc:"extra sampling_params sent with every request"`
	// StopTokenIDs are end-of-turn ids trimmed from recorded output ids.
	StopTokenIDs []int `yaml:"stop_token_ids" doc:"end-of-turn ids trimmed from recorded output ids"`
	// ThinkStart and ThinkEnd delimit inline reasoning.
	ThinkStart string `yaml:"think_start" default:"<think>" doc:"opens reasoning written inline in the answer"`
	ThinkEnd   string `yaml:"think_end" default:"</think>" doc:"closes it"`
	// Metrics is the server's Prometheus URL for concurrency: auto
	// ("": /metrics at the server root, when it answers; off: none).
	Metrics string `yaml:"metrics" doc:"Prometheus URL for concurrency: auto; left out: /metrics at the server root when it answers; off: none"`
}

func init() {
	registry.Register(registry.API[Options]{Name: "sglang", NeedsURLs: true,
		Summary: "SGLang's native /generate: token ids from a tokenize stage in, token ids out", New: newClient})
}

func newClient(srv pool.Server, o *Options) (*registry.Client, error) {
	srv.StopTokenIDs, srv.ThinkStart, srv.ThinkEnd = o.StopTokenIDs, o.ThinkStart, o.ThinkEnd
	c, err := New(Config{Server: srv, Stream: o.Stream, SamplingParams: o.SamplingParams})
	if err != nil {
		return nil, err
	}
	return &registry.Client{Backend: c, TakesIDs: true, Identity: fmt.Sprintf("sglang|%s|%v", srv.Model, o.SamplingParams),
		ProbePath: "/health", Streams: o.Stream, Metrics: o.Metrics}, nil
}
