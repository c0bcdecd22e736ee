package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// Step is what a run would do with one instance.
type Step struct {
	Node *Node
	// Run is false when the instance is up to date.
	Run bool
	// Action says what and why: "up to date", "will run: never ran",
	// "will rerun: max_samples 7000 -> 8000", ...
	Action   string
	Estimate stages.Estimate
	// NewTokens and NewBytes are what the instance itself adds beyond its
	// input (generation adds tokens, a filter adds none), for totals.
	NewTokens int64
	NewBytes  int64
	// Concurrency is the instance's resolved concurrency (item stages).
	Concurrency int
	Mapper      bool
	Err         error
}

// Plan works out, without running anything or calling any server, what a
// run would do: which instances are up to date, which will run and why,
// and estimates of records, tokens, time and cost. store may be nil when
// nothing has run yet.
func (p *Pipeline) Plan(store *state.Store, force map[*Node]bool) []*Step {
	steps := map[*Node]*Step{}
	var out []*Step
	shared := &stages.Shared{}
	for _, n := range p.Nodes {
		s := p.planNode(n, store, steps, shared, force[n])
		steps[n] = s
		out = append(out, s)
	}
	return out
}

func (p *Pipeline) planNode(n *Node, store *state.Store, steps map[*Node]*Step, shared *stages.Shared, force bool) *Step {
	s := p.planStep(n, store, steps, shared, force)
	var inTokens, inBytes int64
	for _, up := range n.Needs {
		inTokens += steps[up].Estimate.CompletionTokens
		inBytes += steps[up].Estimate.Bytes
	}
	// Batch stages select, repeat and order records but generate nothing:
	// the copies a merge weight of 2 makes are no tokens to pay for.
	if s.Mapper {
		s.NewTokens = max(s.Estimate.CompletionTokens-inTokens, 0)
	}
	s.NewBytes = max(s.Estimate.Bytes-inBytes, 0)
	return s
}

// add sums the sizes of two estimates; the sum is exact when both are.
func add(a, b stages.Estimate) stages.Estimate {
	a.Records += b.Records
	a.PromptTokens += b.PromptTokens
	a.CompletionTokens += b.CompletionTokens
	a.Bytes += b.Bytes
	a.Exact = a.Exact && b.Exact
	return a
}

// byDataset splits the input of an instance by dataset, or returns nil when
// some of it comes from an instance that mixes datasets.
func byDataset(needs []*Node, steps map[*Node]*Step) map[string]stages.Estimate {
	if len(needs) == 0 {
		return nil
	}
	parts := map[string]stages.Estimate{}
	for _, up := range needs {
		if up.Dataset == nil {
			return nil
		}
		part, ok := parts[up.Dataset.Name]
		if !ok {
			part.Exact = true
		}
		parts[up.Dataset.Name] = add(part, steps[up].Estimate)
	}
	return parts
}

func (p *Pipeline) planStep(n *Node, store *state.Store, steps map[*Node]*Step, shared *stages.Shared, force bool) *Step {
	s := &Step{Node: n}
	in := stages.Estimate{Exact: true, ByDataset: byDataset(n.Needs, steps)}
	upstreamRuns, upstreamBroken := false, false
	for _, up := range n.Needs {
		us := steps[up]
		upstreamRuns = upstreamRuns || us.Run
		upstreamBroken = upstreamBroken || us.Err != nil
		in = add(in, us.Estimate)
	}
	upstream := n.upstreamIDs()
	if store != nil && !upstreamRuns && !upstreamBroken && len(upstream) > 0 {
		if c, err := store.CountOutputs(upstream); err == nil {
			in.Records, in.Exact = c, true
		}
	}
	if upstreamBroken {
		s.Run, s.Action = true, "blocked: an earlier stage has a problem"
		return s
	}
	pr, err := p.prepare(n, specs.InputInfo{Records: in.Records}, shared, func(string, ...any) {}, true, store)
	if err != nil {
		return p.failStep(s, p.instanceError(n, err))
	}
	s.Concurrency = pr.concurrency
	_, s.Mapper = pr.stage.(stages.Mapper)
	s.Estimate = in
	if est, ok := pr.stage.(stages.Estimator); ok {
		e, err := est.Estimate(in)
		if err != nil {
			return p.failStep(s, p.instanceError(n, err))
		}
		s.Estimate = e
	}
	s.Estimate.ByDataset = nil // it describes an input, not this output
	var prev *state.Instance
	if store != nil {
		if prev, err = store.GetInstance(n.ID); err != nil {
			return p.failStep(s, fmt.Errorf("%s: %w", n.ID, err))
		}
	}
	s.Run, s.Action = true, ""
	switch {
	case force:
		s.Action = "will rerun: forced"
	case prev == nil:
		s.Action = "will run: never ran"
	case prev.Fingerprint != pr.fp:
		s.Action = "will rerun: " + configDiff(string(prev.Stats.Config), pr.config)
	case upstreamRuns && s.Mapper:
		// Outcomes already stored are kept for the records that stay, so
		// only the part of the input beyond them is new work.
		kept := 0
		if counts, err := store.Counts(n.ID); err == nil {
			for _, c := range counts {
				if c.Status == int(stages.Done) || c.Status == int(stages.Dropped) {
					kept += c.N
				}
			}
		}
		todo := max(in.Records-kept, 0)
		s.Estimate = scale(s.Estimate, todo, in.Records)
		if todo == 0 {
			s.Action = "will recheck its input; no new records expected"
		} else {
			s.Action = fmt.Sprintf("will run after its input: about %d new records", todo)
		}
	case upstreamRuns:
		s.Action = "will run if its input changes"
	case s.Mapper:
		pending, err := store.CountPending(n.ID, upstream, pr.fp)
		switch {
		case err != nil:
			s.Action = "error: " + err.Error()
		case pending > 0:
			s.Action = fmt.Sprintf("will run: %d of %d records to do", pending, in.Records)
			s.Estimate = scale(s.Estimate, pending, in.Records)
		case prev.Status != "done":
			s.Action = "will finish: last run stopped early; nothing left to process"
			s.Estimate = scale(s.Estimate, 0, in.Records)
		default:
			s.Run, s.Action = false, "up to date"
		}
	default:
		digest, err := (&runner{p: p, store: store}).inputDigest(n)
		switch {
		case err != nil:
			s.Action = "will run: " + err.Error()
		case batchUpToDate(prev, pr.fp, digest):
			s.Run, s.Action = false, "up to date"
		case prev.InputDigest != digest:
			s.Action = "will rerun: input changed"
		case prev.Stats.Output != "":
			s.Action = "will rerun: " + prev.Stats.Output + " is missing or was changed"
		default:
			s.Action = "will finish: last run stopped early"
		}
	}
	if s.Run && s.Estimate.Note != "" {
		s.Action += " (" + s.Estimate.Note + ")"
	}
	if !s.Run {
		// Up to date: report what is stored, not what was predicted.
		if c, err := store.CountOutputs([]string{n.ID}); err == nil {
			s.Estimate.Records, s.Estimate.Exact = c, true
		}
		if u, err := usage(store, []string{n.ID}); err == nil && s.Mapper {
			s.Estimate.PromptTokens, s.Estimate.CompletionTokens = u.PromptTokens, u.CompletionTokens
		}
	}
	return s
}

// failStep marks a step that cannot be planned. err names the instance; a
// spec error's source line and caret stay in Err, for the full report, while
// Action keeps one line for the table.
func (p *Pipeline) failStep(s *Step, err error) *Step {
	line, _, _ := strings.Cut(p.Spec.Redact(err.Error()), "\n")
	s.Err, s.Run, s.Action = err, true, "error: "+line
	return s
}

// scale keeps the cost figures of the part of an instance still to do.
func scale(e stages.Estimate, part, whole int) stages.Estimate {
	if whole <= 0 || part >= whole {
		return e
	}
	if part <= 0 {
		e.CompletionTokens, e.Seconds, e.Dollars = 0, 0, 0
		return e
	}
	f := float64(part) / float64(whole)
	e.CompletionTokens = int64(float64(e.CompletionTokens) * f)
	e.Seconds *= f
	e.Dollars *= f
	return e
}

// configDiff names the settings that differ between two fingerprint
// materials: "max_samples 7000 -> 8000".
func configDiff(old, cur string) string {
	var a, b map[string]any
	if json.Unmarshal([]byte(old), &a) != nil || json.Unmarshal([]byte(cur), &b) != nil {
		return "configuration changed"
	}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var diffs []string
	for k := range keys {
		if reflect.DeepEqual(a[k], b[k]) {
			continue
		}
		if k == "external" {
			diffs = append(diffs, "input file or model changed")
			continue
		}
		diffs = append(diffs, fmt.Sprintf("%s %s -> %s", k, show(a[k]), show(b[k])))
	}
	sort.Strings(diffs)
	if len(diffs) == 0 {
		return "configuration changed"
	}
	return strings.Join(diffs, ", ")
}

func show(v any) string {
	if v == nil {
		return "(unset)"
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // show ">=" as written, not as \u003e=
	enc.Encode(v)
	return strings.TrimSpace(b.String())
}
