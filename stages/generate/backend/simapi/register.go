package simapi

import (
	"fmt"

	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/stages/generate/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/generate/backend/registry"
)

// Options are the `options:` of an `api: sim` endpoint, the simulated
// target answering in process (sim.Config says more of each).
type Options struct {
	Seed         uint64  `yaml:"seed" doc:"seeds the answers"`
	MeanTokens   int     `yaml:"mean_tokens" default:"300" doc:"mean answer length in tokens"`
	Sigma        float64 `yaml:"sigma" default:"1" doc:"lognormal shape of answer lengths: larger, a longer tail"`
	MaxLen       int     `yaml:"max_len" default:"32768" doc:"longest natural answer"`
	Reasoning    float64 `yaml:"reasoning" doc:"mean share of an answer spent thinking; 0: a model that does not think"`
	Context      int     `yaml:"context" doc:"context window: prompt plus max_tokens beyond it is rejected, as servers do"`
	ToolCallRate float64 `yaml:"tool_call_rate" doc:"chance of a tool call when the prompt offers tools"`
	// Speed is tokens per second per request (0: instant).
	Speed float64 `yaml:"speed" doc:"tokens per second per request; 0: instant"`
}

func init() {
	registry.Register(registry.API[Options]{Name: "sim", New: newClient,
		Summary: "the simulated target, answering in process with no server (eaglet sim-server serves it over HTTP)"})
}

// newClient answers in process: the sim needs no server, so srv gives only
// the model's name.
func newClient(srv pool.Server, o *Options) (*registry.Client, error) {
	m := sim.New(sim.Config{Seed: o.Seed, MeanTokens: o.MeanTokens, Sigma: o.Sigma, MaxLen: o.MaxLen,
		Reasoning: o.Reasoning, Context: o.Context, ToolCallRate: o.ToolCallRate})
	name := srv.Model
	if name == "" {
		name = "sim"
	}
	c := m.Config()
	return &registry.Client{Backend: New(m, Config{Name: name, Speed: o.Speed}), MeanTokens: c.MeanTokens,
		Identity: fmt.Sprintf("sim|%s|%+v", name, c)}, nil
}
