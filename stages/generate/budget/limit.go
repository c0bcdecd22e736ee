package budget

import (
	"fmt"

	"github.com/eaglet-dev/eaglet/specs"
)

// Options limit what a generate instance (or the whole stage) may
// spend. Each limit is an expression; several may be set at once.
type Options struct {
	CompletionTokens specs.Expr `yaml:"completion_tokens" eval:"number"`
	TotalTokens      specs.Expr `yaml:"total_tokens" eval:"number"`
	Samples          specs.Expr `yaml:"samples" eval:"number"`
	Dollars          specs.Expr `yaml:"dollars" eval:"number"`
	// Tolerance is the overshoot accepted, as a fraction of the limit
	// (default 0). Larger finishes sooner: fewer requests wait for
	// the last answers before the final ones are sent.
	Tolerance *float64 `yaml:"tolerance"`
	// Scope is "dataset" (each instance has the whole budget; the default)
	// or "stage" (one budget shared by all the stage's instances).
	Scope string `yaml:"scope" enum:"dataset|stage"`
}

// Limit is one budget limit. A request's cost is fixed + perToken × its
// completion tokens, which covers tokens, samples and dollars alike.
type Limit struct {
	name  string
	max   float64
	spent float64
	// fixed gives the part of a request's cost known before it runs.
	fixed    func(promptTokens int) float64
	perToken float64
}

// Limits turns budget options (already resolved) into limits, dollars
// priced at price.
func Limits(o *Options, price *specs.Price) ([]*Limit, error) {
	for name, x := range map[string]specs.Expr{"completion_tokens": o.CompletionTokens, "total_tokens": o.TotalTokens, "samples": o.Samples, "dollars": o.Dollars} {
		switch x.Value().(type) {
		case nil, int, int64, float64:
		default:
			return nil, fmt.Errorf("budget %s is %q; it must be a number", name, fmt.Sprint(x.Value()))
		}
	}
	var out []*Limit
	zero := func(int) float64 { return 0 }
	if !o.CompletionTokens.IsZero() {
		out = append(out, &Limit{name: "completion_tokens", max: o.CompletionTokens.Float(), fixed: zero, perToken: 1})
	}
	if !o.TotalTokens.IsZero() {
		out = append(out, &Limit{name: "total_tokens", max: o.TotalTokens.Float(), fixed: func(p int) float64 { return float64(p) }, perToken: 1})
	}
	if !o.Samples.IsZero() {
		out = append(out, &Limit{name: "samples", max: o.Samples.Float(), fixed: zero})
	}
	if !o.Dollars.IsZero() && price != nil {
		in, outp := price.Input/1e6, price.Output/1e6
		out = append(out, &Limit{name: "dollars", max: o.Dollars.Float(), fixed: func(p int) float64 { return float64(p) * in }, perToken: outp})
	}
	return out, nil
}

// Name is the limit's option: completion_tokens, total_tokens, samples or dollars.
func (l *Limit) Name() string { return l.name }

// Max is the limit's value.
func (l *Limit) Max() float64 { return l.max }

// Cost is what n requests of these totals cost under the limit.
func (l *Limit) Cost(prompt int, completion float64, n int64) float64 {
	if l.name == "samples" {
		return float64(n)
	}
	return l.fixed(prompt) + l.perToken*completion
}
