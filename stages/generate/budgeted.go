package generate

import (
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

var _ stages.Budgeted = (*Options)(nil)

// BudgetLimits states the budget for the report, which does not know this
// kind; the names are those of the budget's options.
func (o *Options) BudgetLimits() *stages.BudgetLimits {
	b := o.Budget
	if b == nil {
		return nil
	}
	out := &stages.BudgetLimits{Limits: map[string]specs.Expr{}, Shared: b.Scope == "stage"}
	for name, e := range map[string]specs.Expr{"completion_tokens": b.CompletionTokens, "total_tokens": b.TotalTokens,
		"samples": b.Samples, "dollars": b.Dollars} {
		if !e.IsZero() {
			out.Limits[name] = e
		}
	}
	return out
}
