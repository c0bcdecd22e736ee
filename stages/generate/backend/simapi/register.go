package simapi

import (
	"fmt"

	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/stages/generate/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/generate/backend/registry"
)

// Options are the `options:` of an `api: sim` endpoint; zero values take
// sim.Config's defaults.
type Options struct {
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

func init() {
	registry.Register(registry.API[Options]{Name: "sim", New: newClient})
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
