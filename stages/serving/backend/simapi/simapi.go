// Package simapi is the in-process "sim" backend: the deterministic sim
// model behind the backend contract, optionally producing tokens at a fixed
// speed so runs take visible time and can be interrupted mid-stage.
package simapi

import (
	"context"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
)

// Config tunes the backend.
type Config struct {
	// Name is recorded as the generation's model ("sim").
	Name string
	// Speed is tokens per second per request; 0 answers at once.
	Speed float64
	// NoThinking asks a thinking model to answer without reasoning.
	NoThinking bool
}

// Backend answers from a sim.Model.
type Backend struct {
	model *sim.Model
	cfg   Config
}

var _ backend.Backend = (*Backend)(nil)

// New returns a backend answering with m.
func New(m *sim.Model, cfg Config) *Backend {
	if cfg.Name == "" {
		cfg.Name = "sim"
	}
	return &Backend{model: m, cfg: cfg}
}

// progressEvery is how often a slow answer reports progress.
const progressEvery = 20 * time.Millisecond

// Generate answers req. The answer depends on req.Messages and req.Tools
// (req.InputIDs only when there are no messages), so it matches what the sim
// server's chat route gives for the same conversation.
func (b *Backend) Generate(ctx context.Context, req *backend.Request) (*conv.Generation, error) {
	p := sim.Prompt{Messages: req.Messages, Tools: req.Tools, IDs: req.InputIDs}
	o := sim.Options{MaxTokens: req.MaxTokens, NoThinking: b.cfg.NoThinking}
	if err := b.model.Check(p, o); err != nil {
		return nil, &backend.Error{Kind: backend.Permanent, Status: 400, Msg: err.Error()}
	}
	a := b.model.Answer(p, o)
	n := a.CompletionTokens()
	if b.cfg.Speed > 0 {
		if err := b.produce(ctx, n, req.Progress); err != nil {
			return nil, err
		}
	} else if err := ctx.Err(); err != nil {
		return nil, err
	}
	if req.Progress != nil {
		req.Progress(backend.Progress{Tokens: n, Exact: true})
	}
	g := a.Generation(b.cfg.Name, req.MaxTokens)
	if len(req.InputIDs) > 0 {
		// The sim reads the prompt the tokenize stage encoded, as a server
		// of that model would count it: the two always agree.
		g.PromptTokens = len(req.InputIDs)
	}
	return g, nil
}

// produce waits as long as producing n tokens takes, reporting progress.
func (b *Backend) produce(ctx context.Context, n int, progress func(backend.Progress)) error {
	start := time.Now()
	total := time.Duration(float64(n) / b.cfg.Speed * float64(time.Second))
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	done := time.NewTimer(total)
	defer done.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-done.C:
			return nil
		case <-tick.C:
			if progress != nil {
				progress(backend.Progress{Tokens: min(n, int(time.Since(start).Seconds()*b.cfg.Speed)), Exact: true})
			}
		}
	}
}
