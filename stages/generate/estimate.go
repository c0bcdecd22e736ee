package generate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/stages/generate/budget"
)

// Estimate predicts tokens, time and cost from the expected answer length
// (the mean of the answers this instance has so far, else the dataset's
// est_completion_tokens, else the endpoint's default: expectedTokens), the endpoint's
// throughput and its price. It leaves a budget to the plan, saying what is
// left of it and what the records would spend: a stage-wide budget is
// shared with the other datasets' estimates.
func (g *Generate) Estimate(in stages.Estimate) (stages.Estimate, error) {
	var note string
	var err error
	if g.quota != nil {
		if in, note, err = g.quota.estimate(in); err != nil {
			return in, err
		}
	}
	out := in
	if note != "" {
		out.Note = note
	}
	var soFar stages.Usage
	if g.answered != nil {
		if soFar, err = g.answered(); err != nil {
			return out, fmt.Errorf("estimate: read earlier answers: %w", err)
		}
	}
	answers := g.answersPerRecord(in.Sample)
	per, guessed := g.expectedTokens(soFar, answers)
	where := "the datasets"
	if g.ds != nil {
		where = "dataset " + g.ds.Name
	}
	// What plan could not know is said where it is used: a budget's
	// share and the cost follow from it, and a user reading "allows 53%"
	// must know why.
	var unknown, keys []string
	if guessed && in.Records > 0 {
		unknown, keys = append(unknown, fmt.Sprintf("answers guessed at %d tokens", min(g.ep.MeanTokens, g.maxTokens))), append(keys, "est_completion_tokens")
	}
	if answers > 1.05 && in.Records > 0 {
		// The run answers each turn; a user comparing the plan with
		// est_completion_tokens × records must see why it is more.
		out.Note = strings.TrimPrefix(out.Note+fmt.Sprintf("; %.1f answers a record", answers), "; ")
	}
	if in.PromptTokens == 0 && in.Records > 0 {
		// Without a tokenize stage or est_prompt_tokens the prompts'
		// tokens are what the server counted for the answers so far (or
		// before an option changed); with none yet, a cost would leave
		// them out, the larger part of it for long contexts (agent
		// trajectories).
		switch {
		case soFar.Records > 0 && soFar.PromptTokens > 0:
			out.PromptTokens = int64(in.Records) * mean(soFar.PromptTokens, soFar.Records)
		case soFar.SupersededRecords > 0 && soFar.SupersededPromptTokens > 0:
			out.PromptTokens = int64(in.Records) * mean(soFar.SupersededPromptTokens, soFar.SupersededRecords)
		case g.ep.Spec.Price != nil:
			unknown, keys = append(unknown, "the cost leaves out prompt tokens"), append(keys, "est_prompt_tokens")
		}
	}
	if len(unknown) > 0 {
		n := strings.Join(unknown, " and ") + ": set " + strings.Join(keys, " and ") + " on " + where
		out.Note = strings.TrimPrefix(out.Note+"; "+n, "; ")
	}
	out.CompletionTokens = int64(in.Records) * int64(per)
	tps, pace := g.ep.Spec.TokensPerSecond, stages.PaceStated
	if g.throughput != nil {
		measured, n, err := g.throughput()
		if err != nil {
			return out, fmt.Errorf("estimate: read the endpoint's pace: %w", err)
		}
		if n >= measuredPace && measured > 0 {
			// What the server did beats what the spec guessed it would.
			tps, pace = measured, stages.PaceMeasured
		}
	}
	if tps > 0 && out.CompletionTokens > 0 {
		out.Seconds, out.Pace, out.Rate = float64(out.CompletionTokens)/tps, pace, tps
	}
	if p := g.ep.Spec.Price; p != nil {
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
	// Ask the budget whether it would send a record, as a run's first
	// request does: near its end the margin it keeps for long answers
	// admits none, and a plan promising work no run does would never settle.
	exhausted := false
	t, err := g.budget.Admit(context.Background(), int(in.PromptTokens/int64(in.Records)), max(int(math.Round(answers)), 1), 0)
	switch {
	case errors.Is(err, budget.ErrExhausted):
		exhausted = true
	case err != nil:
		return out, err
	default:
		t.Finish(0, -1) // never sent: costs and teaches nothing
	}
	for _, l := range g.limits {
		left := 0.0
		if !exhausted {
			left = l.Max() - l.Cost(int(used.PromptTokens), float64(used.CompletionTokens), used.Records)
		}
		out.Limits = append(out.Limits, stages.Limit{
			Budget: struct {
				b    *budget.Budget
				name string
			}{g.budget, l.Name()},
			Left: max(left, 0),
			Need: l.Cost(int(out.PromptTokens), float64(out.CompletionTokens), int64(out.Records)),
		})
	}
	return out, nil
}

// measuredPace is how many answers make their pace a better estimate of
// the time left than the spec's tokens_per_second.
const measuredPace = 20

// measured is how many live answers make their mean a better estimate of
// the records left than the spec's est_completion_tokens, a guess written
// before any ran.
const measured = 20

// expectedTokens is the completion tokens a record left is expected to
// take, the first of these there is: the mean of this instance's answers
// sent early enough that none was lost in flight when a run stopped
// (Usage.Finished), once there are measured of them; the mean of its live
// answers once there are measured of them (a raised cap's new records are
// priced as the first ones ran); the mean of as many answered before an
// option changed or a forced redo set them aside (the same prompts); what
// the spec says of the dataset; the mean of fewer live answers, or of
// fewer set aside; the endpoint's default. guessed says the default stood
// in and the API does not know it either. u is what the instance's
// answers have used so far. A mean of stored records is of records; the
// spec's value and the default are of one answer, at most max_tokens, so
// they are priced at the answers a record asks for (answers, from a
// sample of the input).
func (g *Generate) expectedTokens(u stages.Usage, answers float64) (per int, guessed bool) {
	oneAnswer := func(n int) int { return int(math.Round(float64(min(n, g.maxTokens)) * answers)) }
	per, guessed = oneAnswer(g.ep.MeanTokens), !g.ep.KnowsMean
	if u.Finished != nil && answers <= 1 {
		// A run stopped early lost its longest answers in flight: the
		// answers sent before any of those could have been are a fair
		// sample. (A record of several answers keeps one answer's timing.)
		n, tokens, err := u.Finished(g.maxTokens)
		if err == nil && n >= measured {
			return int(max(mean(tokens, n), 1)), false
		}
	}
	switch {
	case u.Records >= measured:
		per, guessed = int(max(mean(u.CompletionTokens, u.Records), 1)), false
	case u.SupersededRecords >= measured:
		// The same prompts answered before an option changed, or before
		// `run --force` set them aside: a measure of these very records,
		// which beats a guess written before any ran.
		per, guessed = int(max(mean(u.SupersededCompletionTokens, u.SupersededRecords), 1)), false
	case g.ds != nil && g.ds.EstCompletionTokens > 0:
		per, guessed = oneAnswer(g.ds.EstCompletionTokens), false
	case u.Records > 0:
		per, guessed = int(max(mean(u.CompletionTokens, u.Records), 1)), false
	case u.SupersededRecords > 0:
		per, guessed = int(max(mean(u.SupersededCompletionTokens, u.SupersededRecords), 1)), false
	}
	return per, guessed
}

// answersPerRecord is the mean number of answers the sampled records ask
// for (1 without a sample).
func (g *Generate) answersPerRecord(sample []*conv.Record) float64 {
	if len(sample) == 0 {
		return 1
	}
	n := 0
	for _, rec := range sample {
		n += g.answers(rec)
	}
	return float64(n) / float64(len(sample))
}

// mean is total / n rounded to the nearest; n > 0.
func mean(total, n int64) int64 { return (total + n/2) / n }
