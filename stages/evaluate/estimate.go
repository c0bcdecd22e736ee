package evaluate

import (
	"fmt"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/human"
	"github.com/eaglet-dev/eaglet/stages"
)

// Estimate prices the evaluation: every prompt of the input sent to every
// side at every temperature, answers of the endpoints' expected length up
// to max_tokens, at each endpoint's tokens_per_second. What the results
// table already holds is not sent, so this is the most it costs.
func (e *Evaluate) Estimate(in stages.Estimate) (stages.Estimate, error) {
	out := in
	perRecord := 1.0
	if e.opts.Turns == "all" && len(in.Sample) > 0 {
		turns := 0
		for _, rec := range in.Sample {
			turns += max(1, assistantTurns(rec))
		}
		perRecord = float64(turns) / float64(len(in.Sample))
	}
	prompts := int64(float64(in.Records)*perRecord + 0.5)
	temps := int64(len(e.opts.Temperatures))
	var requests, tokens int64
	var seconds float64
	for _, s := range e.sides {
		n := prompts * temps
		t := n * int64(min(e.opts.MaxTokens, s.ep.MeanTokens))
		requests += n
		tokens += t
		if tps := s.ep.Spec.TokensPerSecond; tps > 0 {
			seconds += float64(t) / tps
		}
	}
	out.CompletionTokens, out.Seconds, out.Dollars = tokens, seconds, 0
	out.Note = fmt.Sprintf("measures %s at %s: up to %s requests, %s answer tokens", sides(e), human.Plural(int(temps), "temperature"),
		human.Int(requests), human.Int(tokens))
	return out, nil
}

// assistantTurns counts rec's assistant messages.
func assistantTurns(rec *conv.Record) int {
	n := 0
	for _, m := range rec.Conversation() {
		if m.Role == conv.Assistant {
			n++
		}
	}
	return n
}

// sides names what an evaluation measures: "2 drafters and the baseline".
func sides(e *Evaluate) string {
	s := human.Plural(len(e.opts.Drafters), "drafter")
	if e.opts.Baseline != "" {
		s += " and the baseline"
	}
	return s
}
