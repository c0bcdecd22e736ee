package sglang

import (
	"fmt"

	"github.com/eaglet-dev/eaglet/stages/generate/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/generate/backend/registry"
)

// Options are the `options:` of an `api: sglang` endpoint (native /generate).
type Options struct {
	Stream bool `yaml:"stream"`
	// SamplingParams are extra sampling_params sent with every request.
	SamplingParams map[string]any `yaml:"sampling_params"`
	// StopTokenIDs are end-of-turn ids trimmed from recorded output ids.
	StopTokenIDs []int `yaml:"stop_token_ids"`
	// ThinkStart and ThinkEnd delimit inline reasoning (default <think>, </think>).
	ThinkStart string `yaml:"think_start"`
	ThinkEnd   string `yaml:"think_end"`
	// Metrics is the server's Prometheus URL for concurrency: auto
	// (default: /metrics at the server root, when it answers; off: none).
	Metrics string `yaml:"metrics"`
}

func init() {
	registry.Register(registry.API[Options]{Name: "sglang", NeedsURLs: true, New: newClient})
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
