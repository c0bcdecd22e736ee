package evaluate

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/accept"
	"github.com/eaglet-dev/eaglet/internal/human"
	"github.com/eaglet-dev/eaglet/internal/outfile"
)

// Report is the JSON file an evaluate stage writes (out): a function of
// the evaluation's rows.
type Report struct {
	Stage string `json:"stage"`
	// Buckets are the context-length bounds of the by_context lines.
	Buckets []int  `json:"buckets"`
	Sides   []Side `json:"drafters"`
	// Comparisons are each drafter against the first, and each against
	// the baseline, on the prompts both measured.
	Comparisons []Comparison `json:"comparisons,omitempty"`
}

// Side is one drafter's (or the baseline's) figures at one sampling.
type Side struct {
	Name string `json:"name"`
	// Drafter is the hash of the drafter's files; "" for the baseline.
	Drafter  string `json:"drafter,omitempty"`
	Endpoint string `json:"endpoint"`
	Sampling string `json:"sampling"`
	// Measured says how: "per request" (SGLang's meta_info) or "per
	// group" (vLLM's counters, whose figures are a group's, not a
	// request's).
	Measured  string  `json:"measured"`
	Total     Figures `json:"total"`
	ByDataset []Line  `json:"by_dataset"`
	ByTurn    []Line  `json:"by_turn"`
	ByContext []Line  `json:"by_context"`
	rows      []accept.Row
}

// Figures are summed counts and the ratios of the sums.
type Figures struct {
	Rows             int     `json:"rows"`
	Requests         int     `json:"requests"`
	CompletionTokens int     `json:"completion_tokens"`
	Verify           int     `json:"verify_steps"`
	Accepted         int     `json:"accepted_tokens"`
	Drafted          int     `json:"drafted_tokens"`
	AcceptLength     float64 `json:"acceptance_length"`
	AcceptRate       float64 `json:"acceptance_rate"`
	// TokensPerSecond is completion tokens a second of a request's time.
	TokensPerSecond float64 `json:"tokens_per_second"`
	Seconds         float64 `json:"request_seconds"`
}

// Line is one line of a breakdown.
type Line struct {
	Label string `json:"label"`
	Figures
}

// Comparison is side B against side A on the prompts both measured.
type Comparison struct {
	A        string `json:"a"`
	B        string `json:"b"`
	Sampling string `json:"sampling"`
	// Figure is "acceptance_length_gain" (B's minus A's) or "speed_up" (B's
	// throughput over A's, A the baseline).
	Figure string  `json:"figure"`
	Value  float64 `json:"value"`
	Low    float64 `json:"low"`
	High   float64 `json:"high"`
	Level  float64 `json:"level"`
	Pairs  int     `json:"pairs"`
	OnlyA  int     `json:"only_a"`
	OnlyB  int     `json:"only_b"`
}

func figures(f accept.Figures) Figures {
	return Figures{Rows: f.Rows, Requests: f.Requests, CompletionTokens: f.CompletionTokens, Verify: f.Verify,
		Accepted: f.Accepted, Drafted: f.Drafted, AcceptLength: round(f.AcceptLength()), AcceptRate: round(f.AcceptRate()),
		TokensPerSecond: round(f.Throughput()), Seconds: round(f.Latency.Seconds())}
}

// round keeps four decimals: figures of a file people diff.
func round(v float64) float64 {
	return float64(int64(v*1e4+0.5)) / 1e4
}

func lines(b accept.Breakdown) []Line {
	out := make([]Line, len(b.Lines))
	for i, l := range b.Lines {
		out[i] = Line{Label: l.Label, Figures: figures(l.Figures)}
	}
	return out
}

// build computes the report from the evaluation's rows.
func (e *Evaluate) build() Report {
	rep := Report{Stage: e.inst.ID, Buckets: e.buckets}
	temps := e.opts.Temperatures
	bySide := map[sideTemp]*Side{}
	for i, s := range e.sides {
		for _, t := range temps {
			rows := e.rows[sideTemp{i, t}]
			sd := Side{Name: s.name, Drafter: s.drafter, Endpoint: s.ep.Spec.Name, Sampling: sampling(t), Measured: "per request",
				Total: figures(accept.Sum(rows)), ByDataset: lines(accept.Break(rows, accept.ByDataset)),
				ByTurn: lines(accept.Break(rows, accept.ByTurn)), ByContext: lines(accept.Break(rows, accept.ByContext(e.buckets))), rows: rows}
			if s.groups {
				sd.Measured = "per group"
			}
			rep.Sides = append(rep.Sides, sd)
			bySide[sideTemp{i, t}] = &rep.Sides[len(rep.Sides)-1]
		}
	}
	resampling := accept.Resampling{Seed: uint64(e.opts.Seed)}
	// The baseline, when there is one, is side 0 and the first drafter
	// the next.
	baseline, firstDrafter := -1, 0
	if e.opts.Baseline != "" {
		baseline, firstDrafter = 0, 1
	}
	for _, t := range temps {
		first := bySide[sideTemp{firstDrafter, t}]
		for i := range e.sides {
			s := bySide[sideTemp{i, t}]
			if i != baseline && i != firstDrafter {
				if c, err := accept.Compare(first.rows, s.rows, resampling); err == nil {
					rep.Comparisons = append(rep.Comparisons, comparison(first.Name, s.Name, s.Sampling, "acceptance_length_gain", c))
				}
			}
			if baseline >= 0 && i != baseline {
				b := bySide[sideTemp{baseline, t}]
				if c, err := accept.SpeedUp(b.rows, s.rows, resampling); err == nil {
					rep.Comparisons = append(rep.Comparisons, comparison(b.Name, s.Name, s.Sampling, "speed_up", c))
				}
			}
		}
	}
	return rep
}

func comparison(a, b, sampling, figure string, c accept.Comparison) Comparison {
	return Comparison{A: a, B: b, Sampling: sampling, Figure: figure, Value: round(c.Value), Low: round(c.Low),
		High: round(c.High), Level: c.Level, Pairs: c.Pairs, OnlyA: c.OnlyA, OnlyB: c.OnlyB}
}

// Lines are the report as a few lines for people: each side's acceptance
// and where it is weakest, then the comparisons.
func (r Report) Lines() []string {
	var out []string
	for _, s := range r.Sides {
		f := s.Total
		if s.Drafter == "" {
			out = append(out, fmt.Sprintf("%s at %s: %s prompts, %s tokens, %.0f tokens/s a request (the target alone)",
				s.Name, s.Sampling, human.Int(f.Requests), human.Int(f.CompletionTokens), f.TokensPerSecond))
			continue
		}
		line := fmt.Sprintf("%s at %s: acceptance length %.2f", s.Name, s.Sampling, f.AcceptLength)
		if f.Drafted > 0 {
			line += fmt.Sprintf(", rate %.0f%%", 100*f.AcceptRate)
		}
		line += fmt.Sprintf(", %s prompts, %s tokens, %.0f tokens/s a request (measured %s)",
			human.Int(f.Requests), human.Int(f.CompletionTokens), f.TokensPerSecond, s.Measured)
		out = append(out, line)
		for _, b := range []struct {
			by    string
			lines []Line
		}{{"dataset", s.ByDataset}, {"turn", s.ByTurn}, {"context", s.ByContext}} {
			if len(b.lines) < 2 {
				continue
			}
			parts := make([]string, len(b.lines))
			for i, l := range b.lines {
				parts[i] = fmt.Sprintf("%s %.2f", l.Label, l.AcceptLength)
			}
			out = append(out, fmt.Sprintf("  by %s: %s", b.by, strings.Join(parts, ", ")))
		}
	}
	for _, c := range r.Comparisons {
		switch c.Figure {
		case "speed_up":
			out = append(out, fmt.Sprintf("%s over %s at %s: %.2fx speed-up (%.0f%%: %.2f to %.2f) on %d prompts",
				c.B, c.A, c.Sampling, c.Value, 100*c.Level, c.Low, c.High, c.Pairs))
		default:
			out = append(out, fmt.Sprintf("%s against %s at %s: acceptance length %+.2f (%.0f%%: %+.2f to %+.2f) on %d prompts",
				c.B, c.A, c.Sampling, c.Value, 100*c.Level, c.Low, c.High, c.Pairs))
		}
	}
	return out
}

// finish reports the evaluation: the lines in the log and for status,
// and the JSON file.
func (e *Evaluate) finish(ctx context.Context) error {
	if e.inst.Results != nil {
		if err := e.inst.Results.Claim(e.inst.ID, e.ids); err != nil {
			return err
		}
	}
	rep := e.build()
	e.figures = rep.Lines()
	for _, l := range e.figures {
		e.log("%s", l)
	}
	if e.out == "" {
		return nil
	}
	spec, err := filepath.Abs(e.inst.Spec.Path)
	if err != nil {
		spec = e.inst.Spec.Path
	}
	err = outfile.Write(e.out, outfile.Options{Spec: spec, Stage: e.inst.ID, Overwrite: e.opts.Overwrite}, func(w io.Writer) error {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", e.out, err)
	}
	e.hash, err = outfile.Stamp(e.out)
	return err
}
