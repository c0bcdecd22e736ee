package report

import (
	"fmt"

	"github.com/eaglet-dev/eaglet/specs"
)

// Budget is an instance's budget as the spec states it.
type Budget struct {
	// Limits evaluates its limits, by what they measure (completion_tokens,
	// total_tokens, samples, dollars), for the instance's input.
	Limits func(in specs.InputInfo) (map[string]float64, error)
	// Shared says one budget serves every instance of the stage.
	Shared bool
}

// budgetLimit is one limit of one budget: the instances it counts (one,
// or the stage's when shared) and how much it allows.
type budgetLimit struct {
	name, measure string
	max           float64
	ids           []string
	price         *Price
}

// budgetLimits lists the limits of the request-sending instances'
// budgets, a shared one once, in the spec's order. A limit is evaluated
// as the kind evaluates it, against the instance's input: its records and
// (as far as the answers tell) their mean prompt length.
func budgetLimits(gens []Instance, o outcomeCounts) ([]budgetLimit, error) {
	var out []budgetLimit
	seen := map[string]bool{}
	for _, g := range gens {
		if g.Budget == nil {
			continue
		}
		name, ids := g.ID, []string{g.ID}
		if g.Budget.Shared {
			if seen[g.Stage] {
				continue
			}
			seen[g.Stage] = true
			name, ids = g.Stage+" (all datasets)", nil
			for _, s := range gens {
				if s.Stage == g.Stage {
					ids = append(ids, s.ID)
				}
			}
		}
		in := specs.InputInfo{Records: o.input(g)}
		if c := o[g.ID]; c != nil && c.done > 0 {
			in.PromptTokensMean = float64(c.promptTok) / float64(c.done)
		}
		limits, err := g.Budget.Limits(in)
		if err != nil {
			return nil, fmt.Errorf("report: budget of %s: %w", g.ID, err)
		}
		for _, m := range []string{"completion_tokens", "total_tokens", "samples", "dollars"} {
			if v, ok := limits[m]; ok && v > 0 {
				out = append(out, budgetLimit{name: name, measure: m, max: v, ids: ids, price: g.Price})
			}
		}
	}
	return out, nil
}

// spent is what answers count against a limit of this measure.
func (l budgetLimit) spent(answers int, prompt, completion int64) float64 {
	switch l.measure {
	case "completion_tokens":
		return float64(completion)
	case "total_tokens":
		return float64(prompt + completion)
	case "samples":
		return float64(answers)
	case "dollars":
		if l.price == nil {
			return 0
		}
		return (float64(prompt)*l.price.Input + float64(completion)*l.price.Output) / 1e6
	}
	return 0
}

// budgetFacts says, for each limit, what is spent of it: the live answers
// of its instances, as the budget counts them across runs.
func budgetFacts(limits []budgetLimit, o outcomeCounts) []Fact {
	var facts []Fact
	for _, l := range limits {
		answers, prompt, completion := 0, int64(0), int64(0)
		for _, id := range l.ids {
			if c := o[id]; c != nil {
				answers, prompt, completion = answers+c.done, prompt+c.promptTok, completion+c.complTok
			}
		}
		spent := l.spent(answers, prompt, completion)
		facts = append(facts, Fact{"budget " + l.name + " " + l.measure,
			fmt.Sprintf("%s of %s (%.0f%%)", amount(l.measure, spent), amount(l.measure, l.max), 100*spent/l.max)})
	}
	return facts
}

func amount(measure string, v float64) string {
	if measure == "dollars" {
		return fmt.Sprintf("$%.2f", v)
	}
	return count(int64(v))
}

// budgetChart draws, for each limit, the share of it spent over the
// timeline's bins, against the limit itself (100%). The answers finished
// before the window, or stored with no timing, start the line: earlier
// runs count against a budget, and the line ends at what it has spent.
func budgetChart(limits []budgetLimit, tl *binned, o outcomeCounts) Chart {
	ss := budgetSeries(limits, tl, o)
	limit := make([]float64, tl.bins)
	for i := range limit {
		limit[i] = 100
	}
	ss = append(ss, series{Name: "the budget (100%)", Points: limit, Dashed: true})
	return lineChart("budget", "budget spent, per limit, all runs", "% of the limit", tl.bins, float64(tl.width)/1000, ss)
}

// budgetSeries is each limit's share spent, cumulated over the bins.
func budgetSeries(limits []budgetLimit, tl *binned, o outcomeCounts) []series {
	var ss []series
	for _, l := range limits {
		pts := make([]float64, tl.bins)
		var untimedA, untimedP, untimedC float64
		for _, id := range l.ids {
			if c := o[id]; c != nil {
				untimedA, untimedP, untimedC = untimedA+float64(c.done), untimedP+float64(c.promptTok), untimedC+float64(c.complTok)
			}
			lb := tl.live[id]
			if lb == nil {
				continue
			}
			for i := range pts {
				pts[i] += l.spent(int(lb.answers[i]), int64(lb.prompt[i]), int64(lb.completion[i]))
				untimedA, untimedP, untimedC = untimedA-lb.answers[i], untimedP-lb.prompt[i], untimedC-lb.completion[i]
			}
		}
		pts[0] += l.spent(int(untimedA), int64(untimedP), int64(untimedC))
		for i := range pts {
			if i > 0 {
				pts[i] += pts[i-1]
			}
		}
		for i := range pts {
			pts[i] *= 100 / l.max
		}
		ss = append(ss, series{Name: l.name + " " + l.measure + " (" + amount(l.measure, l.max) + ")", Points: pts})
	}
	return ss
}
