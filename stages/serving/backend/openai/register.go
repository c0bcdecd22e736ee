package openai

import (
	"fmt"

	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/registry"
)

// Options are the `options:` of an `api: openai` endpoint (vLLM, SGLang,
// OpenRouter).
type Options struct {
	registry.ServerOptions `yaml:",inline"`
	// Completions sends token ids to /v1/completions instead of chat.
	Completions    bool `yaml:"completions" doc:"send the tokenize stage's ids to /v1/completions instead of messages to chat"`
	ReturnTokenIDs bool `yaml:"return_token_ids" doc:"ask for prompt and output token ids (vLLM), kept as the exact context"`
	// ChatTemplateKwargs toggles thinking: enable_thinking (Qwen), thinking (Kimi, DeepSeek).
	ChatTemplateKwargs map[string]any `yaml:"chat_template_kwargs" doc:"sent with every chat request: {enable_thinking: false}, {thinking: true}"`
	// Extra fields merged into every request body (reasoning, provider, ...).
	Extra map[string]any `yaml:"extra" doc:"fields merged into every request body (reasoning, provider, ...)"`
}

func init() {
	registry.Register(registry.API[Options]{Name: "openai", NeedsURLs: true,
		Summary: "an OpenAI-compatible server (vLLM, SGLang's /v1, OpenRouter): chat completions, or token ids to /v1/completions", New: newClient})
}

func newClient(srv pool.Server, o *Options) (*registry.Client, error) {
	c, err := New(Config{Server: o.Server(srv), Completions: o.Completions, Stream: o.Stream,
		ReturnTokenIDs: o.ReturnTokenIDs, ChatTemplateKwargs: o.ChatTemplateKwargs, Extra: o.Extra})
	if err != nil {
		return nil, err
	}
	return &registry.Client{Backend: c, TakesIDs: o.Completions, Kwargs: o.ChatTemplateKwargs,
		Identity:  fmt.Sprintf("openai|%s|%t|%v|%v", srv.Model, o.Completions, o.ChatTemplateKwargs, o.Extra),
		ProbePath: "/models", Streams: o.Stream, Metrics: o.Metrics}, nil
}
