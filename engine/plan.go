package engine

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// Step is what a run would do with one instance.
type Step struct {
	Node *Node
	// Decision is what the run would do with the instance and why; Words
	// renders it with the notes below as plan's ACTION column.
	Decision Decision
	// Notes qualify the estimate of a step that runs: the stage's own
	// ("writes train.jsonl"), the share of the work a budget allows.
	Notes []string
	// Estimate is the instance's whole output once the run is done: the
	// outcomes kept from earlier runs plus what the run adds. Its Seconds
	// and Dollars are those of the run's own work.
	Estimate stages.Estimate
	// NewTokens and NewBytes are what the run adds beyond its input
	// (generation adds tokens, a filter adds none), for totals.
	NewTokens int64
	NewBytes  int64
	// Concurrency is the instance's resolved concurrency (item stages).
	Concurrency int
	Mapper      bool
	// Reused counts the records the run answers from earlier answers to
	// the same content, at no cost; Shared those another instance of the
	// run asks for (a dataset repeating another's prompts).
	Reused, Shared int
	// Todo counts the input records the run processes (for a costly stage,
	// the requests it sends, one per record answered once), after reuse
	// and budgets; a guess when upstream work is guessed.
	Todo int
	// Err is why the step cannot be planned, in full (a spec error's
	// source line and caret); the decision keeps its first line.
	Err error
	// Figures are what the dry run found when it ran the instance
	// (dedupe's benchmark prompts and the records each took), as status
	// will show them.
	Figures []string
}

// Runs reports whether the run would do anything with the instance: all
// but an up-to-date one.
func (s *Step) Runs() bool { return s.Decision.Runs() }

// Plan works out, without calling any server, what a run would do: which
// instances are up to date, which will run and why, and estimates of
// records, tokens, time and cost. store may be nil when nothing has run yet.
//
// Plan and run decide alike by construction: Plan runs the pipeline in dry
// mode (RunOptions.Dry) on a snapshot of the store, so loads, caps,
// filters, merges and answers found again are worked out exactly as the run
// will, and only what costs requests is estimated. sel limits it to what
// `run --stage` would do (the zero Selection: the whole run).
func (p *Pipeline) Plan(store *state.Store, sel Selection) []*Step {
	scratch, results, cleanup, err := p.dryRun(store, sel)
	if err != nil {
		// No snapshot (a full disk): plan from the store as it is.
		return p.selected(p.planOn(store, sel.Force), sel)
	}
	defer cleanup()
	steps := p.selected(p.planOn(scratch, nil), sel)
	for _, s := range steps {
		res := results[s.Node]
		if res == nil || s.Err != nil {
			continue
		}
		s.Reused, s.Shared = res.Reused, res.Shared
		switch res.Outcome {
		case WouldRun:
			// planOn counted what is left after reuse; the reason is the
			// dry run's (a changed option, never ran).
			if res.Decision.Reason != RecordsToDo && res.Decision.Reason != s.Decision.Reason {
				then := s.Decision
				s.Decision = res.Decision
				s.Decision.Then = &then
			}
			if s.Mapper && res.Pending < s.Todo && s.Todo > 0 {
				// Another instance of the run asks for some of these
				// contents: they are paid for once, there.
				f := float64(res.Pending) / float64(s.Todo)
				s.NewTokens = int64(math.Round(float64(s.NewTokens) * f))
				s.Estimate.Seconds *= f
				s.Estimate.Dollars *= f
				s.Todo = res.Pending
			}
		case Ran:
			if res.Decision.Reason == InputChanged && awaitsRequests(p, s.Node, results) {
				// The dry run gave it today's input, which the requests
				// upstream will change, or fail to: the run decides once
				// that input exists, as planOn says.
				break
			}
			// The dry run did it: say why, keeping planOn's notes
			// ("writes train.jsonl") when planOn has it run.
			if !s.Runs() {
				s.Notes = nil
			}
			s.Decision = res.Decision
			if !awaitsRequests(p, s.Node, results) {
				// Else they measure an input the requests will change.
				s.Figures = res.Figures
			}
			if w := s.Decision.Work; w != nil && res.Reused > 0 && res.Reused == res.Processed && s.Decision.Reason == RecordsToDo {
				all := *w
				all.AllReused = true
				s.Decision.Work = &all
			}
		case Errored:
			s.Err, s.Notes = res.Err, nil
			s.Decision = Decision{Action: Fail, Err: res.Err}
		case Blocked:
			s.Decision, s.Notes = res.Decision, nil
		}
		if s.Runs() && s.Decision.Action != Block && store != nil {
			if partial := (&runner{p: p, store: store}).partialInputs(s.Node); partial != nil && partial.Err == nil {
				s.Notes = append(s.Notes, partial.unlessRetried())
			}
		}
	}
	return steps
}

// awaitsRequests reports whether an instance n depends on has requests to
// make in this run (the dry run's WouldRun).
func awaitsRequests(p *Pipeline, n *Node, results map[*Node]*Result) bool {
	for _, up := range p.Ancestors(n.Needs) {
		if r := results[up]; r != nil && r.Outcome == WouldRun {
			return true
		}
	}
	return false
}

// selected keeps the steps of the instances sel runs, with what they need.
func (p *Pipeline) selected(steps []*Step, sel Selection) []*Step {
	if sel.Nodes == nil {
		return steps
	}
	runs := map[*Node]bool{}
	for _, n := range p.Ancestors(sel.Nodes) {
		runs[n] = true
	}
	var out []*Step
	for _, s := range steps {
		if runs[s.Node] {
			out = append(out, s)
		}
	}
	return out
}

// dryRun runs the pipeline's local part on a snapshot of store (an empty
// store when nil) and returns the snapshot, what became of each instance,
// and a function that removes the snapshot.
func (p *Pipeline) dryRun(store *state.Store, sel Selection) (*state.Store, map[*Node]*Result, func(), error) {
	dir, err := os.MkdirTemp("", "eaglet-plan-")
	if err != nil {
		return nil, nil, nil, err
	}
	path := filepath.Join(dir, "state.db")
	if store != nil {
		if err := store.Snapshot(path); err != nil {
			os.RemoveAll(dir)
			return nil, nil, nil, err
		}
	}
	scratch, err := state.Open(path)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, nil, err
	}
	cleanup := func() { scratch.Close(); os.RemoveAll(dir) }
	results, _ := p.Run(context.Background(), scratch, RunOptions{Dry: true, Nodes: sel.Nodes, Force: sel.Force, Log: io.Discard})
	byNode := make(map[*Node]*Result, len(results))
	for _, r := range results {
		byNode[r.Node] = r
	}
	return scratch, byNode, cleanup, nil
}

// planOn works out the steps against the store as it stands.
func (p *Pipeline) planOn(store *state.Store, force map[*Node]bool) []*Step {
	steps := map[*Node]*Step{}
	var out []*Step
	shared := &stages.Shared{}
	// A stage's instances are planned together, since they may share a
	// budget; the stages they need all come before them in p.Nodes.
	for nodes := p.Nodes; len(nodes) > 0; {
		n := 1
		for n < len(nodes) && nodes[n].Stage == nodes[0].Stage {
			n++
		}
		drafts := make([]*draft, n)
		for i, node := range nodes[:n] {
			drafts[i] = p.planStep(node, store, steps, shared, force[node])
		}
		fitBudgets(drafts)
		for _, d := range drafts {
			d.finish(store)
			steps[d.Node] = d.Step
			out = append(out, d.Step)
		}
		nodes = nodes[n:]
	}
	return out
}

// draft is a step before its stage's budgets are applied.
type draft struct {
	*Step
	// estimated is set once the estimates below are worked out; a step
	// that is blocked or in error has none.
	estimated bool
	// kept are the stored outcomes a run keeps (done or dropped), whose
	// input it does not process again, and done those of them it outputs.
	kept, done stages.Estimate
	// whole is the stage's estimate of its output from all its input;
	// work is what the run adds, from workIn, the input it processes.
	whole, work, workIn stages.Estimate
	// leftover counts the records an earlier run left (skipped, failed)
	// when they are all there is to do: a spent budget leaves them be.
	leftover int
	// allowed is the share of the work the budgets let through, and
	// shared says one of those budgets is shared with other instances.
	allowed float64
	shared  bool
	// limitedBy names the limit that allowed least ("" for a budget).
	limitedBy string
}

// add sums the sizes of two estimates; the sum is exact when both are.
func add(a, b stages.Estimate) stages.Estimate {
	a.Records += b.Records
	a.PromptTokens += b.PromptTokens
	a.CompletionTokens += b.CompletionTokens
	a.Bytes += b.Bytes
	a.Exact = a.Exact && b.Exact
	a.Sample = append(a.Sample[:len(a.Sample):len(a.Sample)], b.Sample...)
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

func (p *Pipeline) planStep(n *Node, store *state.Store, steps map[*Node]*Step, shared *stages.Shared, force bool) *draft {
	s := &Step{Node: n}
	d := &draft{Step: s, allowed: 1, done: stages.Estimate{Exact: true}}
	in := stages.Estimate{Exact: true, ByDataset: byDataset(n.Needs, steps)}
	upstreamRuns, upstreamBroken := false, false
	for _, up := range n.Needs {
		us := steps[up]
		upstreamRuns = upstreamRuns || us.Runs()
		upstreamBroken = upstreamBroken || us.Err != nil
		in = add(in, us.Estimate)
	}
	upstream := n.Inputs()
	if store != nil && !upstreamRuns && !upstreamBroken && len(upstream) > 0 {
		if c, err := store.CountOutputs(upstream); err == nil {
			in.Records, in.Exact = c, true
		}
	}
	if upstreamBroken {
		s.Decision = Decision{Action: Block, Reason: NeedsBroken}
		return d
	}
	pr, err := p.prepare(n, specs.InputInfo{Records: in.Records}, shared, func(string, ...any) {}, true, store)
	if err != nil {
		p.failStep(s, p.instanceError(n, err))
		return d
	}
	s.Concurrency = pr.concurrency
	_, s.Mapper = pr.stage.(stages.Mapper)
	var prev *state.Instance
	if store != nil {
		if prev, err = store.GetInstance(n.ID); err != nil {
			p.failStep(s, fmt.Errorf("%s: %w", n.ID, err))
			return d
		}
	}
	// todo is how many input records the run processes.
	todo := in.Records
	// The decision is the run's own (decide.go); only an input still to be
	// made is the plan's, since the run decides once that input exists.
	byConfig, ok := decideConfig(prev, pr, force)
	switch {
	case ok:
		s.Decision = byConfig
	case upstreamRuns && s.Mapper:
		// Outcomes already stored are kept for the records that stay, so
		// only the part of the input beyond them is new work.
		if err := d.readKept(store); err != nil {
			p.failStep(s, fmt.Errorf("%s: %w", n.ID, err))
			return d
		}
		todo = max(in.Records-d.kept.Records, 0)
		s.Decision = Decision{Action: Wait, Reason: InputToCome, Work: &Work{Todo: todo}}
	case upstreamRuns:
		s.Decision = Decision{Action: Wait, Reason: InputToCome}
	case s.Mapper:
		left, err := store.CountPending(n.ID, upstream, pr.fp)
		if err == nil {
			err = d.readKept(store)
		}
		if err != nil {
			p.failStep(s, fmt.Errorf("%s: %w", n.ID, err))
			return d
		}
		todo = left.Records
		d.leftover = todo
		s.Decision = decideMapper(prev, pr, force, todo, in.Records)
	default:
		digest, err := (&runner{p: p, store: store}).inputDigest(n)
		if err != nil {
			s.Decision = Decision{Action: Run, Reason: InputUnread, Err: err}
			break
		}
		s.Decision = decideBatch(prev, pr, force, digest)
	}
	if !s.Runs() {
		todo = 0
	}
	s.Todo = todo
	if err := d.estimate(pr.stage, in, todo); err != nil {
		p.failStep(s, p.instanceError(n, err))
	}
	return d
}

// readKept reads the outcomes a run keeps from the store.
func (d *draft) readKept(store *state.Store) error {
	counts, err := store.Counts(d.Node.ID)
	if err != nil {
		return err
	}
	for _, c := range counts {
		e := stages.Estimate{Records: c.N, PromptTokens: c.PromptTokens, CompletionTokens: c.CompletionTokens}
		switch c.Status {
		case int(stages.Done):
			d.done = add(d.done, e)
			d.kept = add(d.kept, e)
		case int(stages.Dropped):
			d.kept = add(d.kept, e)
		}
	}
	return nil
}

// estimate works out the instance's output from all its input, and the
// run's work from the todo records of it that no kept outcome stands for.
func (d *draft) estimate(st stages.Stage, in stages.Estimate, todo int) error {
	est, ok := st.(stages.Estimator)
	of := func(in stages.Estimate) (stages.Estimate, error) {
		if !ok {
			return in, nil
		}
		return est.Estimate(in)
	}
	var err error
	if d.whole, err = of(in); err != nil {
		return err
	}
	switch {
	case todo == in.Records && d.kept.Records == 0:
		d.work, d.workIn = d.whole, in
	case todo > 0:
		// Bytes are shared out by records; tokens are what the kept
		// outcomes do not account for, since an outcome counts the tokens
		// of the record it came from (generate adds completions to those
		// of an input without any), so the totals downstream add up.
		d.workIn = scaled(in, float64(todo)/float64(in.Records))
		d.workIn.Records = todo
		d.workIn.PromptTokens = max(in.PromptTokens-d.kept.PromptTokens, 0)
		d.workIn.CompletionTokens = max(in.CompletionTokens-d.kept.CompletionTokens, 0)
		if d.work, err = of(d.workIn); err != nil {
			return err
		}
	}
	d.estimated = true
	return nil
}

// finish cuts the work to what the budgets allow and settles the step's
// action and estimate.
func (d *draft) finish(store *state.Store) {
	s := d.Step
	if !d.estimated {
		return
	}
	work, workIn := d.work, d.workIn
	if d.allowed < 1 {
		work, workIn = scaled(work, d.allowed), scaled(workIn, d.allowed)
		work.Exact = false
		s.Todo = int(math.Round(float64(s.Todo) * d.allowed))
		if d.allowed == 0 && d.leftover > 0 {
			s.Todo = 0
			s.Decision = Decision{Action: Skip, Reason: LimitSpent, Limit: d.limitedBy, Work: &Work{Todo: d.leftover}}
		}
	}
	if !s.Runs() {
		// Up to date: report what is stored, not what was predicted.
		s.Estimate = d.whole
		s.Estimate.Seconds, s.Estimate.Dollars = 0, 0
		if c, err := store.CountOutputs([]string{s.Node.ID}); err == nil {
			s.Estimate.Records, s.Estimate.Exact = c, true
		}
		if u, err := usage(store, []string{s.Node.ID}); err == nil && s.Mapper {
			s.Estimate.PromptTokens, s.Estimate.CompletionTokens = u.PromptTokens, u.CompletionTokens
		}
		return
	}
	// The output is what is kept plus what the run adds. The store does
	// not say how many bytes the kept outcomes take; the estimate does.
	s.Estimate = add(d.done, work)
	s.Estimate.Bytes = d.whole.Bytes - d.work.Bytes + work.Bytes
	s.Estimate.Exact = s.Estimate.Exact && d.whole.Exact
	s.Estimate.Seconds, s.Estimate.Dollars, s.Estimate.Pace, s.Estimate.Rate = work.Seconds, work.Dollars, work.Pace, work.Rate
	// Batch stages select, repeat and order records but generate nothing:
	// the copies a merge weight of 2 makes are no tokens to pay for.
	if s.Mapper {
		s.NewTokens = max(work.CompletionTokens-workIn.CompletionTokens, 0)
	}
	s.NewBytes = max(work.Bytes-workIn.Bytes, 0)
	if d.whole.Note != "" {
		s.Notes = append(s.Notes, d.whole.Note)
	}
	if d.allowed < 1 {
		budget := "the budget"
		if d.shared {
			budget = "the stage's budget"
		}
		s.Notes = append(s.Notes, fmt.Sprintf("%s allows %d%% of them", budget, int(100*d.allowed)))
	}
}

// failStep marks a step that cannot be planned. err names the instance; a
// spec error's source line and caret stay in Err, for the full report,
// while the decision keeps it scrubbed of secrets for the table.
func (p *Pipeline) failStep(s *Step, err error) {
	s.Err = err
	s.Decision = Decision{Action: Fail, Err: &redacted{p.Spec.Redact(err.Error()), err}}
}

// scaled keeps the share f of an estimate's records, tokens, bytes, time
// and cost, as if its records were alike.
func scaled(e stages.Estimate, f float64) stages.Estimate {
	if f >= 1 {
		return e
	}
	f = max(f, 0)
	e.Records = int(math.Round(float64(e.Records) * f))
	e.PromptTokens = int64(math.Round(float64(e.PromptTokens) * f))
	e.CompletionTokens = int64(math.Round(float64(e.CompletionTokens) * f))
	e.Bytes = int64(math.Round(float64(e.Bytes) * f))
	e.Seconds *= f
	e.Dollars *= f
	e.ByDataset = nil // its parts would no longer add up to it
	return e
}
