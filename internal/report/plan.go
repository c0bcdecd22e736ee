package report

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/eaglet-dev/eaglet/state"
)

// PlanStep is what `eaglet plan` estimated for one instance, as it is
// recorded in the store.
type PlanStep struct {
	Instance string `json:"instance"`
	// Run says the plan would run the instance.
	Run bool `json:"run"`
	// Records is the instance's whole output once run, Exact when counted.
	Records int  `json:"records"`
	Exact   bool `json:"exact,omitempty"`
	// Todo counts the requests the run would send (records answered).
	Todo int `json:"todo"`
	// CompletionTokens are those the requests would bring.
	CompletionTokens int64   `json:"completion_tokens"`
	Seconds          float64 `json:"seconds"`
	Dollars          float64 `json:"dollars"`
}

// RecordedPlan is the body of a recorded plan.
type RecordedPlan struct {
	Steps []PlanStep `json:"steps"`
}

// PlanTable is the page's plan versus actual: the plan's figures for each
// request-sending instance beside what the runs since the plan did.
type PlanTable struct {
	// Title says when the plan was made and whether the spec has changed
	// since; Note says what the figures are, or how to get a plan.
	Title, Note string
	// Changed says the spec is not the one the plan was made for.
	Changed bool
	Rows    []PlanRow
}

// PlanRow is one instance (or the total) of the plan: planned and actual
// records, requests, completion tokens, time and cost, as shown.
type PlanRow struct {
	Instance string
	Cells    []PlanCell
}

// PlanCell is one figure, planned beside actual.
type PlanCell struct{ Plan, Actual string }

// planHead names the figures of a PlanRow.
var planHead = []string{"records", "requests", "completion tokens", "time", "cost"}

// planTable compares the last recorded plan with the answers sent since
// it was made (by one run, or several when one was stopped and resumed).
func planTable(ctx context.Context, st *state.Store, in Input, gens []Instance, o outcomeCounts, now time.Time) (*PlanTable, error) {
	rec, err := st.LastPlan(ctx)
	if err != nil || rec == nil {
		return &PlanTable{Note: "No plan recorded: `eaglet plan` records its estimates in the store, and this table then compares them with the runs after it."}, err
	}
	var body RecordedPlan
	if err := json.Unmarshal(rec.Body, &body); err != nil {
		return nil, fmt.Errorf("report: recorded plan: %w", err)
	}
	t := &PlanTable{Changed: in.SpecFP != "" && rec.SpecFP != in.SpecFP}
	t.Title = fmt.Sprintf("Plan versus actual: the plan of %s (%s ago), ", rec.Made.Format("2006-01-02 15:04:05"), age(now.Sub(rec.Made)))
	if t.Changed {
		t.Title += "made for an earlier version of the spec: it has changed since"
	} else {
		t.Title += "made for the spec as it is"
	}
	t.Note = "Planned (left) and done since the plan was made (right): records the instance outputs in all, requests sent, their completion tokens, the time from the first request to the last answer, and their cost at the endpoint's price."
	steps := map[string]PlanStep{}
	for _, s := range body.Steps {
		steps[s.Instance] = s
	}
	var total PlanStep
	var all state.Spent
	var allCost float64
	for _, g := range gens {
		s, ok := steps[g.ID]
		if !ok {
			continue
		}
		sp, err := st.AnswersSince(ctx, []string{g.ID}, rec.Made.UnixMilli())
		if err != nil {
			return nil, err
		}
		cost := priced(g.Price, sp.PromptTokens, sp.CompletionTokens)
		done := 0
		if c := o[g.ID]; c != nil {
			done = c.done
		}
		t.Rows = append(t.Rows, planRow(g.ID, s, done, sp, cost, g.Price != nil))
		total.Records += s.Records
		total.Todo += s.Todo
		total.CompletionTokens += s.CompletionTokens
		total.Seconds = max(total.Seconds, s.Seconds)
		total.Dollars += s.Dollars
		all.Answers += sp.Answers
		all.CompletionTokens += sp.CompletionTokens
		if sp.First > 0 && (all.First == 0 || sp.First < all.First) {
			all.First = sp.First
		}
		all.Last = max(all.Last, sp.Last)
		allCost += cost
	}
	if len(t.Rows) > 1 {
		done := 0
		for _, g := range gens {
			if c := o[g.ID]; c != nil {
				done += c.done
			}
		}
		// Instances run side by side: the plan's time is the longest one's.
		t.Rows = append(t.Rows, planRow("all", total, done, all, allCost, allCost > 0 || total.Dollars > 0))
	}
	if len(t.Rows) == 0 {
		t.Note = "The recorded plan has none of this spec's request-sending instances."
	}
	return t, nil
}

func planRow(id string, s PlanStep, done int, sp state.Spent, cost float64, hasPrice bool) PlanRow {
	recs := fmt.Sprint(s.Records)
	if !s.Exact {
		recs = "~" + recs
	}
	r := PlanRow{Instance: id, Cells: []PlanCell{
		{recs, count(int64(done))},
		{count(int64(s.Todo)), count(int64(sp.Answers))},
		{count(s.CompletionTokens), count(sp.CompletionTokens)},
		{"-", "-"},
		{"-", "-"},
	}}
	if s.Seconds > 0 {
		r.Cells[3].Plan = age(time.Duration(s.Seconds * float64(time.Second)))
	}
	if sp.Answers > 0 && sp.Last > sp.First {
		r.Cells[3].Actual = age(time.Duration(sp.Last-sp.First) * time.Millisecond)
	}
	if hasPrice {
		r.Cells[4] = PlanCell{fmt.Sprintf("$%.2f", s.Dollars), fmt.Sprintf("$%.2f", cost)}
	}
	return r
}

func priced(p *Price, prompt, completion int64) float64 {
	if p == nil {
		return 0
	}
	return (float64(prompt)*p.Input + float64(completion)*p.Output) / 1e6
}

// age writes a duration as 45s, 12m30s or 3h05m (or days past 48 hours).
func age(d time.Duration) string {
	if d >= 48*time.Hour {
		return fmt.Sprintf("%.0f days", d.Hours()/24)
	}
	return elapsed(d.Seconds())
}
