package openai

import (
	"fmt"

	"github.com/eaglet-dev/eaglet/stages/generate/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/generate/backend/registry"
)

// Options are the `options:` of an `api: openai` endpoint (vLLM, SGLang,
// OpenRouter).
type Options struct {
	// Completions sends token ids to /v1/completions instead of chat.
	Completions    bool `yaml:"completions"`
	Stream         bool `yaml:"stream"`
	ReturnTokenIDs bool `yaml:"return_token_ids"`
	// ChatTemplateKwargs toggles thinking: enable_thinking (Qwen), thinking (Kimi, DeepSeek).
	ChatTemplateKwargs map[string]any `yaml:"chat_template_kwargs"`
	// Extra fields merged into every request body (reasoning, provider, ...).
	Extra map[string]any `yaml:"extra"`
	// StopTokenIDs are end-of-turn ids trimmed from recorded token ids.
	StopTokenIDs []int `yaml:"stop_token_ids"`
	// ThinkStart and ThinkEnd delimit inline reasoning (default <think>, </think>).
	ThinkStart string `yaml:"think_start"`
	ThinkEnd   string `yaml:"think_end"`
	// Metrics is the server's Prometheus URL for concurrency: auto
	// (default: /metrics at the server root, when it answers; off: none).
	Metrics string `yaml:"metrics"`
}

func init() {
	registry.Register(registry.API[Options]{Name: "openai", NeedsURLs: true, New: newClient})
}

func newClient(srv pool.Server, o *Options) (*registry.Client, error) {
	srv.StopTokenIDs, srv.ThinkStart, srv.ThinkEnd = o.StopTokenIDs, o.ThinkStart, o.ThinkEnd
	c, err := New(Config{Server: srv, Completions: o.Completions, Stream: o.Stream,
		ReturnTokenIDs: o.ReturnTokenIDs, ChatTemplateKwargs: o.ChatTemplateKwargs, Extra: o.Extra})
	if err != nil {
		return nil, err
	}
	return &registry.Client{Backend: c, TakesIDs: o.Completions, Kwargs: o.ChatTemplateKwargs,
		Identity:  fmt.Sprintf("openai|%s|%t|%v|%v", srv.Model, o.Completions, o.ChatTemplateKwargs, o.Extra),
		ProbePath: "/models", Streams: o.Stream, Metrics: o.Metrics}, nil
}
