package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/internal/human"
	"github.com/eaglet-dev/eaglet/internal/report"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

func init() {
	register(command{
		name:    "status",
		summary: "per stage and dataset: done, dropped, skipped, failed, tokens, time",
		run:     runStatus,
		examples: []example{
			{"per instance: done, dropped, skipped and failed records with reasons", "eaglet status specs/examples/quickstart.yaml"},
			{"the same for scripts", "eaglet status --json specs/examples/quickstart.yaml > status.json"},
		},
	})
}

// instanceStatus is one row of `eaglet status`, also its --json form: the
// engine's status of the instance with what status prices and draws.
type instanceStatus struct {
	*engine.Status
	MeanCompletion float64 `json:"mean_completion_tokens,omitempty"`
	Dollars        float64 `json:"dollars,omitempty"`
	// Lengths is the completion-length histogram of a request-sending
	// instance, drawn as a sparkline in the table's notes.
	Lengths *lengthHistogram `json:"completion_lengths,omitempty"`
}

// lengthHistogram is a length histogram as `status --json` gives it:
// bin i counts the answers of Edges[i] to Edges[i+1]-1 tokens.
type lengthHistogram struct {
	Log            bool    `json:"log_scale"`
	Edges          []int   `json:"edges"`
	Counts         []int   `json:"counts"`
	MaxTokens      int     `json:"max_tokens,omitempty"`
	CutAtMaxTokens float64 `json:"cut_at_max_tokens"`
	line           string
}

func runStatus(_ context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "status", "[--json] [--allow-outside] SPEC", "Shows what the state store holds for each stage instance.")
	asJSON := fs.Bool("json", false, "print JSON for scripts")
	p, store, err := specAndStore(env, fs, args)
	defer closeStore(store)
	if err != nil {
		return err
	}
	rows, err := collectStatus(p, store, state.Holder(p.Spec.State) != 0)
	if err != nil {
		return err
	}
	launched, err := launchedFigures(p, store, time.Time{})
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		out := map[string]any{"spec": p.Spec.Name, "state": p.Spec.State, "running_pid": state.Holder(p.Spec.State), "instances": rows}
		if len(launched) > 0 {
			out["launched"] = launched
		}
		return enc.Encode(out)
	}
	switch {
	case store == nil:
		fmt.Fprintf(env.stdout, "%s has not run yet (no state at %s)\n", p.Spec.Name, p.Spec.State)
	case neverRan(rows):
		fmt.Fprintf(env.stdout, "%s has not run yet (%s holds only what `eaglet plan` saved)\n", p.Spec.Name, p.Spec.State)
	}
	if pid := state.Holder(p.Spec.State); pid != 0 {
		fmt.Fprintf(env.stdout, "a run is in progress (pid %d); figures are what it has committed so far\n", pid)
	}
	printStatus(env.stdout, p, rows)
	printReplicas(env.stdout, "", launched)
	return nil
}

// neverRan reports whether no instance has run: a store `plan` made
// before any run holds only its figures.
func neverRan(rows []instanceStatus) bool {
	for _, r := range rows {
		if r.State != engine.NotRun {
			return false
		}
	}
	return true
}

// collectStatus reads every instance's figures from the store (nil: not
// run) and adds what status prices and draws. live says a run is working
// on the store, so an instance marked running is running, not
// incomplete.
func collectStatus(p *engine.Pipeline, store *state.Store, live bool) ([]instanceStatus, error) {
	sts, err := p.Status(store, live)
	if err != nil {
		return nil, err
	}
	rows := make([]instanceStatus, len(sts))
	for i, es := range sts {
		st := instanceStatus{Status: es}
		if st.Done > 0 && st.CompletionTokens > 0 {
			st.MeanCompletion = float64(st.CompletionTokens) / float64(st.Done)
		}
		if o, ok := es.Node.Stage.Options.(stages.EndpointUser); ok {
			if store != nil && st.Done > 0 {
				h, err := report.Lengths(context.Background(), store, es.Instance)
				if err != nil {
					return nil, err
				}
				st.Lengths = &lengthHistogram{Log: h.Log, Edges: h.Edges, Counts: h.Counts, MaxTokens: h.MaxTokens,
					CutAtMaxTokens: h.CutShare(), line: h.Sparkline() + "  " + h.Summary()}
			}
			if ep := p.Spec.Endpoint(o.EndpointName()); ep != nil && ep.Price != nil {
				st.Dollars = (float64(st.PromptTokens)*ep.Price.Input + float64(st.CompletionTokens)*ep.Price.Output) / 1e6
			}
		}
		rows[i] = st
	}
	return rows, nil
}

// printStatus writes the status table and each instance's reasons and files.
func printStatus(w io.Writer, p *engine.Pipeline, rows []instanceStatus) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "INSTANCE\tSTATE\tIN\tDONE\tDROPPED\tSKIPPED\tFAILED\tPROMPT TOK\tCOMPL TOK\tMEAN\tCOST\tTIME\t")
	for _, r := range rows {
		mean, cost := "-", "-"
		if r.MeanCompletion > 0 {
			mean = fmt.Sprintf("%.0f", r.MeanCompletion)
		}
		if r.Dollars > 0 {
			cost = fmt.Sprintf("$%.2f", r.Dollars)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t\n", r.Instance, r.State, r.In, r.Done, r.Dropped, r.Skipped, r.Failed,
			count(r.PromptTokens), count(r.CompletionTokens), mean, cost, duration(r.Seconds))
	}
	tw.Flush()
	for _, r := range rows {
		var notes []string
		if r.Detected != "" {
			notes = append(notes, "read as "+r.Detected)
		}
		notes = append(notes, r.Figures...)
		if r.Lengths != nil {
			notes = append(notes, "answer lengths "+r.Lengths.line)
		}
		if r.Requests > 0 {
			line := fmt.Sprintf("%s sent", human.Plural(r.Requests, "request"))
			if n := sumValues(r.Retries); n > 0 {
				line += fmt.Sprintf(", %d of them retries (%s)", n, byCount(r.Retries))
			}
			notes = append(notes, line)
		}
		if r.Duplicates > 0 {
			notes = append(notes, fmt.Sprintf("%s stored once", human.Plural(r.Duplicates, "duplicate")))
		}
		if r.Copies > 0 {
			notes = append(notes, fmt.Sprintf("%d extra copies of records passed on more than once (weights)", r.Copies))
		}
		if r.Pending > 0 {
			notes = append(notes, fmt.Sprintf("%d of the records in have no outcome yet (run again)", r.Pending))
		}
		if r.Reused > 0 {
			notes = append(notes, fmt.Sprintf("%d of the done records reuse an earlier answer to the same prompt (no request)", r.Reused))
		}
		notes = append(notes, reasonList("bad rows skipped", r.BadRows)...)
		notes = append(notes, reasonList("", r.Reasons)...)
		notes = append(notes, reasonList("flagged", r.Flagged)...)
		// A stale instance's files are those of its last complete pass:
		// a run that stopped before it must not read as having rewritten them.
		wrote, when := "wrote ", ""
		if r.State == engine.Stale {
			wrote, when = "holds ", " (from before its input changed; run again)"
		}
		for _, f := range append([]string{r.Output}, r.MoreOutputs...) {
			if f != "" {
				notes = append(notes, wrote+f+when)
			}
		}
		if r.Error != "" {
			notes = append(notes, "error: "+p.Spec.Redact(r.Error))
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, "%s:\n    %s\n", r.Instance, strings.Join(notes, "\n    "))
		}
	}
}

// maxReasons is how many lines of reasons an instance shows; the rest are
// summed in one line (status --json lists every one).
const maxReasons = 10

// mergeAbove is how many reasons of one shape (alike but for their
// numbers) are listed apart: a few are different things (http 500, http
// 503), many are one thing naming each record's number.
const mergeAbove = 4

// reasonList writes an instance's reasons, most records first. More than
// mergeAbove reasons that differ only in their numbers (a server's message
// naming each prompt's length) are one line, each number that differs
// shown as its range, so a hundred records failing alike read as one.
func reasonList(prefix string, m map[string]int) []string {
	// A reason cut at its numbers: text, number, text, ..., text.
	shapes := map[string][][]string{}
	for k := range m {
		parts := splitNumbers(k)
		shape := strings.Join(textParts(parts), "#")
		shapes[shape] = append(shapes[shape], parts)
	}
	counts := map[string]int{}
	for _, alike := range shapes {
		if len(alike) <= mergeAbove {
			for _, parts := range alike {
				k := strings.Join(parts, "")
				counts[k] += m[k]
			}
			continue
		}
		// The first reason is the line's text, whatever the map's order.
		slices.SortFunc(alike, func(a, b []string) int { return strings.Compare(strings.Join(a, ""), strings.Join(b, "")) })
		line := slices.Clone(alike[0])
		for i := 1; i < len(line); i += 2 {
			lo, hi := math.MaxInt, math.MinInt
			for _, parts := range alike {
				v, _ := strconv.Atoi(parts[i])
				lo, hi = min(lo, v), max(hi, v)
			}
			if lo != hi {
				line[i] = fmt.Sprintf("%d-%d", lo, hi)
			}
		}
		n := 0
		for _, parts := range alike {
			n += m[strings.Join(parts, "")]
		}
		counts[strings.Join(line, "")] += n
	}
	lines := make([]string, 0, len(counts))
	for l := range counts {
		lines = append(lines, l)
	}
	sort.Slice(lines, func(i, j int) bool {
		return counts[lines[i]] > counts[lines[j]] || (counts[lines[i]] == counts[lines[j]] && lines[i] < lines[j])
	})
	var out []string
	rest, restN := 0, 0
	for i, l := range lines {
		if i >= maxReasons && len(lines) > maxReasons+1 {
			rest, restN = rest+1, restN+counts[l]
			continue
		}
		line := fmt.Sprintf("%d × %s", counts[l], l)
		if prefix != "" {
			line = prefix + ": " + line
		}
		out = append(out, line)
	}
	if rest > 0 {
		out = append(out, fmt.Sprintf("%d more reasons, %s (status --json lists each)", rest, human.Plural(restN, "record")))
	}
	return out
}

// splitNumbers cuts s into text and numbers, alternately, starting and
// ending with text (maybe empty). A number is a run of digits standing
// alone: the 2 of bench2.jsonl is part of a name.
func splitNumbers(s string) []string {
	var parts []string
	text := 0
	for i := 0; i < len(s); {
		if !isDigit(s[i]) {
			i++
			continue
		}
		j := i
		for j < len(s) && isDigit(s[j]) {
			j++
		}
		if (i == 0 || !isLetter(s[i-1])) && (j == len(s) || !isLetter(s[j])) {
			parts = append(parts, s[text:i], s[i:j])
			text = j
		}
		i = j
	}
	return append(parts, s[text:])
}

func isDigit(c byte) bool  { return c >= '0' && c <= '9' }
func isLetter(c byte) bool { return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// textParts is the text between the numbers of parts from splitNumbers.
func textParts(parts []string) []string {
	out := make([]string, 0, len(parts)/2+1)
	for i := 0; i < len(parts); i += 2 {
		out = append(out, parts[i])
	}
	return out
}
