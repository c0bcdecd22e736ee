package simapi

import (
	"fmt"

	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/registry"
)

// Options are the `options:` of an `api: sim` endpoint, the simulated
// target answering in process: the model's own settings, as sim-server's
// flags set them, and the pace of an answer.
type Options struct {
	sim.Config `yaml:",inline"`
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
	m := sim.New(o.Config)
	name := srv.Model
	if name == "" {
		name = "sim"
	}
	c := m.Config()
	return &registry.Client{Backend: New(m, Config{Name: name, Speed: o.Speed}), MeanTokens: c.MeanTokens,
		Identity: fmt.Sprintf("sim|%s|%+v", name, c)}, nil
}
