package generate

import (
	"context"
	"errors"
	"fmt"

	"github.com/eaglet-dev/eaglet/stages"
)

// Estimate predicts tokens, time and cost from the dataset's expected
// answer length, the endpoint's throughput and its price. It leaves a
// budget to the plan, saying what is left of it and what the records would
// spend: a stage-wide budget is shared with the other datasets' estimates.
func (g *Generate) Estimate(in stages.Estimate) (stages.Estimate, error) {
	in, note, err := g.quotaEstimate(in)
	if err != nil {
		return in, err
	}
	out := in
	if note != "" {
		out.Note = note
	}
	per := g.ep.meanTokens
	if g.ds != nil && g.ds.EstCompletionTokens > 0 {
		per = g.ds.EstCompletionTokens
	}
	per = min(per, g.maxTokens)
	out.CompletionTokens = int64(in.Records) * int64(per)
	if tps := g.ep.spec.TokensPerSecond; tps > 0 {
		out.Seconds = float64(out.CompletionTokens) / tps
	}
	if p := g.ep.spec.Price; p != nil {
		out.Dollars = (float64(out.PromptTokens)*p.Input + float64(out.CompletionTokens)*p.Output) / 1e6
	}
	out.Bytes = in.Bytes + out.CompletionTokens*4
	out.Exact = false
	if len(g.limits) == 0 || in.Records == 0 {
		return out, nil
	}
	var used stages.Usage
	if g.usage != nil {
		var err error
		if used, err = g.usage(); err != nil {
			return out, fmt.Errorf("budget: read earlier usage: %w", err)
		}
	}
	// Ask the budget whether it would send a request, as a run's first
	// request does: near its end the margin it keeps for long answers
	// admits none, and a plan promising work no run does would never settle.
	exhausted := false
	t, err := g.budget.admit(context.Background(), int(in.PromptTokens/int64(in.Records)), 1)
	switch {
	case errors.Is(err, ErrBudgetExhausted):
		exhausted = true
	case err != nil:
		return out, err
	default:
		t.finish(0, -1) // never sent: costs and teaches nothing
	}
	for _, l := range g.limits {
		left := 0.0
		if !exhausted {
			left = l.max - l.cost(int(used.PromptTokens), float64(used.CompletionTokens), used.Records)
		}
		out.Limits = append(out.Limits, stages.Limit{
			Budget: struct {
				b    *budget
				name string
			}{g.budget, l.name},
			Left: max(left, 0),
			Need: l.cost(int(out.PromptTokens), float64(out.CompletionTokens), int64(out.Records)),
		})
	}
	return out, nil
}
