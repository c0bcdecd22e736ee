package engine

import (
	"context"
	"fmt"
	"reflect"
	"runtime"
	"strings"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// prepared is an instance ready to run or plan: options resolved, stage
// built, fingerprint made.
type prepared struct {
	node        *Node
	inst        *stages.Instance
	stage       stages.Stage
	fp          string
	config      string
	concurrency int
	// reuseAtDispatch makes each record of an item stage look for an
	// answer to reuse when it is dispatched (see runMapper).
	reuseAtDispatch bool
}

// prepare resolves a node's instance-level expressions against what is
// known of its input and builds its stage. Its errors do not name the
// instance; callers name it with instanceError.
func (p *Pipeline) prepare(n *Node, in specs.InputInfo, shared *stages.Shared, logf func(string, ...any), dry bool, store *state.Store) (*prepared, error) {
	spec := p.Spec
	env := spec.Env(n.Dataset, in)
	opts := cloneOptions(n.Stage.Options)
	reads := false
	_ = walkExprs(reflect.ValueOf(opts), func(e *specs.Expr) error {
		reads = reads || e.Reads("acceptance")
		return nil
	})
	if reads { // reading every evaluation is for the instances that look
		acceptance, err := latestAcceptance(store)
		if err != nil {
			return nil, err
		}
		env["acceptance"] = acceptance
	}
	err := walkExprs(reflect.ValueOf(opts), func(e *specs.Expr) error { return e.ResolveOption(env) })
	if err != nil {
		return nil, err
	}
	inst := &stages.Instance{ID: n.ID, Stage: n.Stage.Spec, Dataset: n.Dataset, Spec: spec, Options: opts,
		Log: logf, Shared: shared, DryRun: dry}
	for _, other := range p.Nodes {
		if other.Stage == n.Stage {
			inst.Siblings = append(inst.Siblings, other.ID)
		}
	}
	if store != nil {
		inst.Usage = func(ids []string) (stages.Usage, error) { return usage(store, ids) }
		inst.Throughput = func(ids []string) (float64, int, error) {
			return store.ThroughputOf(context.Background(), ids, throughputAnswers)
		}
		inst.Checkpoints = store.Checkpoints(n.ID)
		inst.Results = store.Evaluations()
	}
	inst.Downstream = func() (*stages.Downstream, error) { return p.downstream(n, shared, dry, store) }
	st, err := n.Stage.Kind.New(inst)
	if err != nil {
		return nil, err
	}
	_, isMapper := st.(stages.Mapper)
	_, isBatch := st.(stages.Batch)
	if isMapper == isBatch {
		return nil, fmt.Errorf("stage kind %s must implement exactly one of Mapper and Batch", n.Stage.Kind.Name)
	}
	extra := map[string]any{}
	if f, ok := st.(stages.Fingerprinter); ok {
		ext, err := f.Fingerprint()
		if err != nil {
			return nil, err
		}
		// "" is nothing beyond the options, so an instance fingerprints
		// as it did before its kind had more to say.
		if ext != "" {
			extra["external"] = ext
		}
	}
	fp, config := fingerprint(n.Stage.Kind.Name, opts, extra, spec.ConcealJSON)
	inst.ConfigFP = fp

	conc := 4 * runtime.NumCPU()
	if c, ok := st.(stages.Concurrenter); ok {
		conc = c.DefaultConcurrency()
	}
	if ce := n.Stage.Spec.Concurrency; !ce.IsZero() {
		v, err := ce.EvalInt(env)
		if err != nil {
			return nil, err
		}
		if v < 1 {
			return nil, ce.Errorf("concurrency evaluates to %d; want at least 1", v)
		}
		if v > specs.MaxConcurrency {
			return nil, ce.Errorf("concurrency evaluates to %d; want at most %d", v, specs.MaxConcurrency)
		}
		conc = v
	}
	return &prepared{node: n, inst: inst, stage: st, fp: fp, config: config, concurrency: max(conc, 1)}, nil
}

// start does the costly setup a stage defers to the run that needs it
// (stages.Starter).
func start(st stages.Stage) error {
	if s, ok := st.(stages.Starter); ok {
		return s.Start()
	}
	return nil
}

// instanceError names the instance in an error from building it. A spec
// error keeps pointing at the option value that was evaluated (at the stage
// when the value was a default) and gains its source line; the id says which
// dataset's evaluation failed, since every instance shares that position.
func (p *Pipeline) instanceError(n *Node, err error) error {
	return p.instancesError([]*Node{n}, err)
}

// instancesError is instanceError for the instances of one stage that
// failed alike, named together so the problem is reported once.
func (p *Pipeline) instancesError(nodes []*Node, err error) error {
	ids := make([]string, len(nodes))
	for i, n := range nodes {
		ids[i] = n.ID
	}
	id := strings.Join(ids, ", ")
	// Not errors.As: a spec error wrapped in context keeps that context.
	se, ok := err.(*specs.Error)
	if !ok {
		return fmt.Errorf("%s: %w", id, err)
	}
	pos := se.Pos
	if pos.Line == 0 {
		pos = nodes[0].Stage.Spec.Pos
	}
	return p.Spec.Errorf(pos, "%s: %s", id, se.Msg)
}

// lengthSample is how many completion lengths usage reads per instance:
// enough to fit a length distribution, few enough to read in milliseconds.
const lengthSample = 4096

// finishedSlack widens the time an answer of the longest length takes at
// the answers' mean pace: one request runs slower than the mean when the
// server is fuller or queues it.
const finishedSlack = 1.5

// finished is Usage.Finished for one instance: the done outcomes sent at
// least the time an answer of longest tokens takes before the last one
// finished. None is in flight long enough to be missing from them. It
// gives none when a run finished after the last answer did: no answer was
// lost, so the mean of all of them stands, and plan's price does not hang
// on how fast the machine happened to run the requests.
// throughputAnswers is how many of the latest answers the pace a plan
// prices time at is measured over: enough to smooth out a few long ones,
// few enough to follow a server that changed.
const throughputAnswers = 5000

func finished(store *state.Store, id string, longest int) (records, completionTokens int64, err error) {
	last, pace, err := store.AnswerPace(id)
	if err != nil || last == 0 || pace <= 0 {
		return 0, 0, err
	}
	in, err := store.GetInstance(id)
	if err != nil {
		return 0, 0, err
	}
	if in != nil && in.FinishedAt.UnixMilli() >= last {
		return 0, 0, nil
	}
	takes := int64(float64(longest) / pace * finishedSlack * 1000)
	return store.AnswersSentBy(id, last-takes)
}

// usage adds up the live, done outcomes of instances.
func usage(store *state.Store, ids []string) (stages.Usage, error) {
	var u stages.Usage
	for _, id := range ids {
		counts, err := store.Counts(id)
		if err != nil {
			return u, err
		}
		lengths, err := store.CompletionLengths(id, lengthSample)
		if err != nil {
			return u, err
		}
		u.Lengths = append(u.Lengths, lengths...)
		n, ptok, ctok, err := store.SupersededAnswers(id)
		if err != nil {
			return u, err
		}
		u.SupersededRecords += n
		u.SupersededPromptTokens += ptok
		u.SupersededCompletionTokens += ctok
		for _, c := range counts {
			if c.Status == int(stages.Done) {
				u.Records += int64(c.N)
				u.PromptTokens += c.PromptTokens
				u.CompletionTokens += c.CompletionTokens
			}
		}
	}
	if len(ids) == 1 {
		u.Finished = func(longest int) (int64, int64, error) { return finished(store, ids[0], longest) }
	}
	return u, nil
}
