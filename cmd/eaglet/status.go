package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/internal/report"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

func init() {
	register(command{name: "status", summary: "per stage and dataset: done, dropped, skipped, failed, tokens, time", run: runStatus})
}

// instanceStatus is one row of `eaglet status`, also its --json form.
type instanceStatus struct {
	Instance string `json:"instance"`
	Stage    string `json:"stage"`
	Dataset  string `json:"dataset,omitempty"`
	State    string `json:"state"`
	// In counts the records the instance received: the live output of
	// each of its needs (a record two needs pass on counts twice), or for
	// a loader what it read. In = Done - Copies + Dropped + Duplicates +
	// Skipped + Failed + Pending.
	In               int            `json:"in"`
	Done             int            `json:"done"`
	Dropped          int            `json:"dropped"`
	Skipped          int            `json:"skipped"`
	Failed           int            `json:"failed"`
	PromptTokens     int64          `json:"prompt_tokens"`
	CompletionTokens int64          `json:"completion_tokens"`
	MeanCompletion   float64        `json:"mean_completion_tokens,omitempty"`
	Dollars          float64        `json:"dollars,omitempty"`
	Seconds          float64        `json:"seconds"`
	Reasons          map[string]int `json:"reasons,omitempty"`
	BadRows          map[string]int `json:"bad_rows_skipped,omitempty"`
	Detected         string         `json:"detected,omitempty"`
	Output           string         `json:"output,omitempty"`
	MoreOutputs      []string       `json:"more_outputs,omitempty"`
	Error            string         `json:"error,omitempty"`
	// Reused counts done records answered from an earlier answer to the
	// same content instead of a new request.
	Reused int `json:"reused,omitempty"`
	// Duplicates counts input records that repeated an earlier one and
	// were kept once (not dropped).
	Duplicates int `json:"duplicates,omitempty"`
	// Requests counts the requests the live outcomes took over all runs,
	// retries included; Retries the retried failures by kind.
	Requests int            `json:"requests,omitempty"`
	Retries  map[string]int `json:"retries,omitempty"`
	// Copies counts records passed on more than once (merge's weights
	// above 1), beyond the first of each.
	Copies int `json:"copies,omitempty"`
	// Pending counts input records with no outcome yet: a run cut short,
	// or input that changed since the instance ran.
	Pending int `json:"pending,omitempty"`
	// Flagged counts records passed on but marked (decontamination's
	// action: flag), and Examples shows a few dropped or flagged records
	// beside what they matched (a dedupe's survivor, a benchmark line).
	Flagged  map[string]int  `json:"flagged,omitempty"`
	Examples []state.Example `json:"examples,omitempty"`
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
	rows, err := collectStatus(p, store)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(env.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(map[string]any{"spec": p.Spec.Name, "state": p.Spec.State, "running_pid": state.Holder(p.Spec.State), "instances": rows})
	}
	if store == nil {
		fmt.Fprintf(env.stdout, "%s has not run yet (no state at %s)\n", p.Spec.Name, p.Spec.State)
	}
	if pid := state.Holder(p.Spec.State); pid != 0 {
		fmt.Fprintf(env.stdout, "a run is in progress (pid %d); figures are what it has committed so far\n", pid)
	}
	printStatus(env.stdout, p, rows)
	return nil
}

// collectStatus reads every instance's figures from the store (nil: not run).
func collectStatus(p *engine.Pipeline, store *state.Store) ([]instanceStatus, error) {
	var rows []instanceStatus
	live := state.Holder(p.Spec.State) != 0
	for _, n := range p.Nodes {
		st := instanceStatus{Instance: n.ID, Stage: n.Stage.Spec.Name, State: "not run"}
		if n.Dataset != nil {
			st.Dataset = n.Dataset.Name
		}
		if store != nil {
			if err := fillStatus(store, &st, live); err != nil {
				return nil, err
			}
			if err := account(store, n, &st); err != nil {
				return nil, err
			}
		}
		if st.Done > 0 && st.CompletionTokens > 0 {
			st.MeanCompletion = float64(st.CompletionTokens) / float64(st.Done)
		}
		if o, ok := n.Stage.Options.(stages.EndpointUser); ok {
			if store != nil && st.Done > 0 {
				h, err := report.Lengths(context.Background(), store, n.ID)
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
		rows = append(rows, st)
	}
	// An instance whose input is still being made is not final, whatever
	// it finished last time; one that never ran on an unfinished input
	// (a merge that would not write over failed records) is waiting.
	state := map[string]string{}
	for i, n := range p.Nodes {
		for _, up := range n.Needs {
			s := state[up.ID]
			switch {
			case s != "done" && s != "" && rows[i].State == "done":
				rows[i].State = "stale"
			case s != "done" && s != "" && s != "not run" && rows[i].State == "not run":
				rows[i].State = "waiting"
			}
		}
		state[n.ID] = rows[i].State
	}
	return rows, nil
}

// account fills in what the instance received and what of it has no
// outcome yet, so that every record in is accounted for: passed on,
// dropped by reason, a duplicate, skipped, failed or pending.
func account(store *state.Store, n *engine.Node, st *instanceStatus) error {
	accounted := st.Done - st.Copies + st.Dropped + st.Duplicates + st.Skipped + st.Failed
	if len(n.Needs) == 0 {
		st.In = accounted + sumValues(st.BadRows)
		return nil
	}
	if st.State == "not run" {
		return nil
	}
	// Each need's records on their own: those several needs share are
	// counted as dropped (collapsed, or a dedupe's copies) by the reader.
	for _, id := range n.Inputs() {
		c, err := store.CountOutputs([]string{id})
		if err != nil {
			return err
		}
		st.In += c
	}
	st.Pending = max(st.In-accounted, 0)
	return nil
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
		if r.Lengths != nil {
			notes = append(notes, "answer lengths "+r.Lengths.line)
		}
		if r.Requests > 0 {
			line := fmt.Sprintf("%s sent", engine.Plural(r.Requests, "request"))
			if n := sumValues(r.Retries); n > 0 {
				line += fmt.Sprintf(", %d of them retries (%s)", n, byCount(r.Retries))
			}
			notes = append(notes, line)
		}
		if r.Duplicates > 0 {
			notes = append(notes, fmt.Sprintf("%s stored once", engine.Plural(r.Duplicates, "duplicate")))
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
		if r.Output != "" {
			notes = append(notes, "wrote "+r.Output)
		}
		for _, f := range r.MoreOutputs {
			notes = append(notes, "wrote "+f)
		}
		if r.Error != "" {
			notes = append(notes, "error: "+p.Spec.Redact(r.Error))
		}
		if len(notes) > 0 {
			fmt.Fprintf(w, "%s:\n    %s\n", r.Instance, strings.Join(notes, "\n    "))
		}
	}
}

func reasonList(prefix string, m map[string]int) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || (m[keys[i]] == m[keys[j]] && keys[i] < keys[j]) })
	var out []string
	for _, k := range keys {
		line := fmt.Sprintf("%d × %s", m[k], k)
		if prefix != "" {
			line = prefix + ": " + line
		}
		out = append(out, line)
	}
	return out
}

// fillStatus reads one instance's row and counts; live says a run holds
// the store now, so a "running" instance is running rather than killed.
func fillStatus(store *state.Store, st *instanceStatus, live bool) error {
	in, err := store.GetInstance(st.Instance)
	if err != nil || in == nil {
		return err
	}
	st.State, st.Seconds, st.Detected, st.Output, st.Error = in.Status, in.Seconds, in.Stats.Detected, in.Stats.Output, in.Error
	if in.Status == "running" && !live {
		st.State = "incomplete"
	}
	counts, err := store.Counts(st.Instance)
	if err != nil {
		return err
	}
	st.Reasons = map[string]int{}
	for _, c := range counts {
		switch stages.Status(c.Status) {
		case stages.Done:
			st.Done += c.N
			st.Reused += c.Reused
			st.PromptTokens += c.PromptTokens
			st.CompletionTokens += c.CompletionTokens
			continue
		case stages.Dropped:
			st.Dropped += c.N
		case stages.Skipped:
			st.Skipped += c.N
		case stages.Failed:
			st.Failed += c.N
		}
		st.Reasons[stages.Status(c.Status).String()+": "+c.Reason] += c.N
	}
	for reason, n := range in.Stats.Dropped {
		if reason == "duplicate" {
			st.Duplicates += n
			continue
		}
		st.Dropped += n
		st.Reasons["dropped: "+reason] += n
	}
	if st.Requests, st.Retries, err = store.Requests(st.Instance); err != nil {
		return err
	}
	if len(st.Retries) == 0 {
		st.Retries = nil
	}
	st.BadRows = in.Stats.Skipped
	st.Copies = in.Stats.Copies
	st.MoreOutputs = slices.Sorted(maps.Keys(in.Stats.MoreOutputs))
	st.Flagged, st.Examples = in.Stats.Flagged, in.Stats.Examples
	// An instance with failed records finished its pass but is not done:
	// the next run retries them, and what follows works on part of it.
	if st.State == "done" && st.Failed > 0 {
		st.State = "partial"
		if st.Done == 0 {
			st.State = "failed"
		}
	}
	return nil
}
