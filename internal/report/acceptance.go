package report

import (
	"fmt"
	"slices"

	"github.com/eaglet-dev/eaglet/internal/accept"
	"github.com/eaglet-dev/eaglet/internal/human"
	"github.com/eaglet-dev/eaglet/state"
)

// Evaluation is what the report needs to know of an evaluate stage's
// options to recompute the figures the stage itself reports.
type Evaluation struct {
	// Buckets are the stage's context-length bounds (defaultBuckets when
	// nil).
	Buckets accept.Buckets
	// Drafters names the drafters in the spec's order: each is compared
	// with the first. Without them, the order the rows were measured in.
	Drafters []string
	// Seed seeds the comparisons' bootstrap, as the stage's own.
	Seed uint64
}

// defaultBuckets are the evaluate stage's default context-length bounds,
// for an evaluation whose stage is no longer in the spec.
var defaultBuckets = accept.Buckets{1000, 2000, 4000, 8000, 16000, 32000}

// Acceptance is one evaluate stage's figures at one sampling.
type Acceptance struct {
	ID, Stage, Sampling string
	// Note says how the figures were measured.
	Note        string
	Sides       []SideRow
	Comparisons []ComparisonRow
	Charts      []Chart
}

// SideRow is one drafter's (or the baseline's) totals, written for the page.
type SideRow struct {
	Name, AcceptLength, Rate, Prompts, Tokens, TokensPerSecond string
}

// ComparisonRow is one side against another on the prompts both measured.
type ComparisonRow struct {
	A, B, Figure, Value, Interval string
	Pairs                         int
}

// side is one drafter's rows, or the baseline's.
type side struct {
	name     string
	baseline bool
	rows     []accept.Row
}

// acceptance reads every evaluation in the store and makes a part of the
// page for each evaluate stage and sampling.
func acceptance(st *state.Store, in Input) ([]Acceptance, error) {
	stages, err := st.Evaluations().Stages()
	if err != nil {
		return nil, err
	}
	var out []Acceptance
	for _, stage := range stages {
		rows, err := st.Evaluations().Rows(stage)
		if err != nil {
			return nil, err
		}
		ev := in.Evaluations[stage]
		if ev.Buckets == nil {
			ev.Buckets = defaultBuckets
		}
		for _, s := range bySampling(rows) {
			out = append(out, acceptanceOf(stage, s.label, sidesOf(s.rows, ev.Drafters), ev))
		}
	}
	return out, nil
}

// group is rows sharing one key, in the order the key first appeared.
type group struct {
	label string
	rows  []accept.Row
}

func groupBy(rows []accept.Row, key func(accept.Row) string) []group {
	index := map[string]int{}
	var out []group
	for _, r := range rows {
		k := key(r)
		i, ok := index[k]
		if !ok {
			i = len(out)
			index[k] = i
			out = append(out, group{label: k})
		}
		out[i].rows = append(out[i].rows, r)
	}
	return out
}

func bySampling(rows []accept.Row) []group {
	return groupBy(rows, func(r accept.Row) string { return r.Sampling })
}

// sidesOf splits rows by drafter: the baseline first, then the drafters
// in the spec's order, then any the spec no longer names, as measured.
func sidesOf(rows []accept.Row, order []string) []side {
	var out []side
	for _, g := range groupBy(rows, func(r accept.Row) string { return r.Name }) {
		out = append(out, side{name: g.label, baseline: g.rows[0].Drafter == "", rows: g.rows})
	}
	rank := func(s side) int {
		if s.baseline {
			return -1
		}
		if i := slices.Index(order, s.name); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(out, func(a, b side) int { return rank(a) - rank(b) })
	return out
}

func acceptanceOf(stage, sampling string, sides []side, ev Evaluation) Acceptance {
	a := Acceptance{ID: stage + "-" + sampling, Stage: stage, Sampling: sampling, Note: "measured per request (the server's meta_info)"}
	var baseline *side
	var drafters []side
	for i, s := range sides {
		f := accept.Sum(s.rows)
		if f.Rows < f.Requests {
			a.Note = "measured per group of requests (the server's counters): a line's figures are its groups'"
		}
		row := SideRow{Name: s.name, AcceptLength: "—", Rate: "—", Prompts: human.Int(f.Requests),
			Tokens: human.Int(f.CompletionTokens), TokensPerSecond: fmt.Sprintf("%.0f", f.Throughput())}
		if s.baseline {
			row.Name += " (target alone)"
			baseline = &sides[i]
		} else {
			drafters = append(drafters, s)
			row.AcceptLength = fmt.Sprintf("%.2f", f.AcceptLength())
			if f.Drafted > 0 {
				row.Rate = fmt.Sprintf("%.0f%%", 100*f.AcceptRate())
			}
		}
		a.Sides = append(a.Sides, row)
	}
	r := accept.Resampling{Seed: ev.Seed}
	for i, d := range drafters {
		if i > 0 {
			if c, err := accept.Compare(drafters[0].rows, d.rows, r); err == nil {
				a.Comparisons = append(a.Comparisons, ComparisonRow{A: drafters[0].name, B: d.name, Figure: "acceptance length gain",
					Value: fmt.Sprintf("%+.2f", c.Value), Interval: fmt.Sprintf("%.0f%%: %+.2f to %+.2f", 100*c.Level, c.Low, c.High), Pairs: c.Pairs})
			}
		}
		if baseline != nil {
			if c, err := accept.SpeedUp(baseline.rows, d.rows, r); err == nil {
				a.Comparisons = append(a.Comparisons, ComparisonRow{A: baseline.name, B: d.name, Figure: "speed-up",
					Value: fmt.Sprintf("%.2fx", c.Value), Interval: fmt.Sprintf("%.0f%%: %.2fx to %.2fx", 100*c.Level, c.Low, c.High), Pairs: c.Pairs})
			}
		}
	}
	a.Charts = []Chart{
		acceptChart("accept-dataset-"+a.ID, "acceptance length by dataset", "dataset", drafters, accept.ByDataset),
		acceptChart("accept-context-"+a.ID, "acceptance length by context length", "context tokens", drafters, accept.ByContext(ev.Buckets)),
	}
	return a
}

// acceptChart draws each drafter's acceptance length along d, a group of
// bars per value of d and a bar per drafter.
func acceptChart(id, what, axis string, drafters []side, d accept.Dimension) Chart {
	var all []accept.Row
	for _, s := range drafters {
		all = append(all, s.rows...)
	}
	var cats []string
	for _, l := range accept.Break(all, d).Lines {
		cats = append(cats, l.Label)
	}
	var ss []barSeries
	for _, s := range drafters {
		at := map[string]accept.Figures{}
		for _, l := range accept.Break(s.rows, d).Lines {
			at[l.Label] = l.Figures
		}
		b := barSeries{Name: s.name}
		for _, c := range cats {
			f := at[c]
			b.Bars = append(b.Bars, groupedBar{Value: f.AcceptLength(), Tokens: f.CompletionTokens, Verify: f.Verify})
		}
		ss = append(ss, b)
	}
	return groupedChart(id, what, axis, "acceptance length", cats, ss)
}
