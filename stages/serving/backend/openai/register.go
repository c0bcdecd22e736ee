package openai

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/eaglet-dev/eaglet/specs"
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
	// Provider is OpenRouter's provider routing, typed and checked.
	Provider *Routing `yaml:"provider" doc:"OpenRouter's provider routing: {order, only, ignore, allow_fallbacks, require_parameters, data_collection, quantizations, sort}, part of the answers' identity"`
}

// Routing is OpenRouter's provider routing, the request's "provider"
// object: which providers may answer, in what order and at which
// quantisation. The serving stack decides the answers a drafter learns,
// so it is part of their identity: another routing asks again.
type Routing struct {
	Order             []string `yaml:"order"`
	Only              []string `yaml:"only"`
	Ignore            []string `yaml:"ignore"`
	AllowFallbacks    *bool    `yaml:"allow_fallbacks"`
	RequireParameters *bool    `yaml:"require_parameters"`
	DataCollection    string   `yaml:"data_collection" enum:"allow|deny"`
	Quantizations     []string `yaml:"quantizations"`
	Sort              string   `yaml:"sort" enum:"price|throughput|latency"`
}

// quantizations are the levels OpenRouter filters providers by.
var quantizations = []string{"int4", "int8", "fp4", "fp6", "fp8", "fp16", "bf16", "fp32", "unknown"}

var _ specs.OptionsChecker = (*Options)(nil)

// Problems refuses routing given twice, and quantisation levels
// OpenRouter does not know (it would route as if the filter were absent).
func (o *Options) Problems() []specs.OptionsProblem {
	var out []specs.OptionsProblem
	if _, dup := o.Extra["provider"]; dup && o.Provider != nil {
		out = append(out, specs.OptionsProblem{Path: []string{"extra", "provider"},
			Msg: "provider routing is given twice, in provider and in extra.provider; keep provider, which is checked"})
	}
	if o.Provider != nil {
		for _, q := range o.Provider.Quantizations {
			if !slices.Contains(quantizations, q) {
				out = append(out, specs.OptionsProblem{Path: []string{"provider", "quantizations"},
					Msg: fmt.Sprintf("provider quantizations has %q; OpenRouter's levels are %s", q, strings.Join(quantizations, ", "))})
			}
		}
	}
	return out
}

// body is the routing as the request's "provider" object, in the types a
// spec's extra.provider decodes to, so moving it from extra to provider
// keeps the answers' identity.
func (r *Routing) body() map[string]any {
	m := map[string]any{}
	list := func(key string, v []string) {
		if len(v) > 0 {
			l := make([]any, len(v))
			for i, s := range v {
				l[i] = s
			}
			m[key] = l
		}
	}
	list("order", r.Order)
	list("only", r.Only)
	list("ignore", r.Ignore)
	list("quantizations", r.Quantizations)
	if r.AllowFallbacks != nil {
		m["allow_fallbacks"] = *r.AllowFallbacks
	}
	if r.RequireParameters != nil {
		m["require_parameters"] = *r.RequireParameters
	}
	if r.DataCollection != "" {
		m["data_collection"] = r.DataCollection
	}
	if r.Sort != "" {
		m["sort"] = r.Sort
	}
	return m
}

func init() {
	registry.Register(registry.API[Options]{Name: "openai", NeedsURLs: true,
		Summary: "an OpenAI-compatible server (vLLM, SGLang's /v1, OpenRouter): chat completions, or token ids to /v1/completions", New: newClient})
}

func newClient(srv pool.Server, o *Options) (*registry.Client, error) {
	if o.Provider != nil {
		extra := maps.Clone(o.Extra)
		if extra == nil {
			extra = map[string]any{}
		}
		extra["provider"] = o.Provider.body()
		o.Extra = extra
	}
	c, err := New(Config{Server: o.Server(srv), Completions: o.Completions, Stream: o.Stream,
		ReturnTokenIDs: o.ReturnTokenIDs, ChatTemplateKwargs: o.ChatTemplateKwargs, Extra: o.Extra})
	if err != nil {
		return nil, err
	}
	return &registry.Client{Backend: c, TakesIDs: o.Completions, Kwargs: o.ChatTemplateKwargs,
		Identity:  fmt.Sprintf("openai|%s|%t|%v|%v", srv.Model, o.Completions, o.ChatTemplateKwargs, o.Extra),
		ProbePath: "/models", Streams: o.Stream, Metrics: o.Metrics}, nil
}
