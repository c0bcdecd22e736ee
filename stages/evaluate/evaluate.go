package evaluate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/internal/accept"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/stages/serving/endpoint"
)

// Evaluate is one evaluate stage: its sides (the baseline's server, then
// each drafter's) measured in turn on the prompts of its input.
type Evaluate struct {
	inst    *stages.Instance
	opts    *Options
	sides   []*side
	buckets accept.Buckets
	// tmpl renders later turns for an endpoint that takes token ids; nil
	// without a tokenizer.
	tmpl *chat.Template
	// out is the JSON file of the figures ("" for none), and hash its
	// stamp once written.
	out, hash string
	log       func(string, ...any)

	// sent counts the requests sent in this run, and found the rows found
	// in the results table instead.
	sent, found atomic.Int64
	mu          sync.Mutex
	// rows are the evaluation's rows, this run's and those found again,
	// by side and temperature, and ids their identities.
	rows map[sideTemp][]accept.Row
	ids  []string
	// figures are the lines the summary and status show.
	figures []string
}

// side is one server the stage measures: a drafter's, or the baseline's.
type side struct {
	name string
	// files is the drafter's directory, "" for the baseline; drafter its
	// identity (the hash of its files), once Fingerprint has read them.
	files, drafter string
	ep             *endpoint.Endpoint
	client         *endpoint.Client
	// groups is set when the side is measured per group (vLLM's
	// counters), and known once its servers said which way they report.
	groups, known bool
	released      bool
}

// sideTemp names the rows of one side at one temperature.
type sideTemp struct {
	side int
	temp float64
}

var (
	_ stages.Batch         = (*Evaluate)(nil)
	_ stages.Fingerprinter = (*Evaluate)(nil)
	_ stages.Reporter      = (*Evaluate)(nil)
	_ stages.Releaser      = (*Evaluate)(nil)
	_ stages.Estimator     = (*Evaluate)(nil)
	_ stages.Progressor    = (*Evaluate)(nil)
	_ stages.Remote        = (*Evaluate)(nil)
)

// Remote marks the stage's work as requests: plan prices it, never runs it.
func (e *Evaluate) Remote() {}

func newEvaluate(inst *stages.Instance, o *Options) (stages.Stage, error) {
	e := &Evaluate{inst: inst, opts: o, buckets: accept.Buckets(o.Buckets), log: inst.Log, rows: map[sideTemp][]accept.Row{}}
	if e.log == nil {
		e.log = func(string, ...any) {}
	}
	if o.Out != "" {
		e.out = inst.Spec.Resolve(o.Out)
	}
	timeout, _ := time.ParseDuration(o.Timeout) // checked
	add := func(name, epName, files string) error {
		ep, err := endpoint.Shared(inst, epName)
		if err != nil {
			return err
		}
		s := &side{name: name, ep: ep, client: &endpoint.Client{Endpoint: ep, Instance: inst.ID + "/" + name, Share: 1,
			Timeout: timeout, Retries: *o.Retries}}
		if files != "" {
			s.files = inst.Spec.Resolve(files)
		}
		e.sides = append(e.sides, s)
		return nil
	}
	// The baseline goes first: it is often the endpoint generate used,
	// whose servers then serve it straight on and stop before the
	// drafters' start, rather than hold their GPUs idle meanwhile.
	if o.Baseline != "" {
		if err := add("baseline", o.Baseline, ""); err != nil {
			return nil, err
		}
	}
	for _, d := range o.Drafters {
		if err := add(d.Name, d.Endpoint, d.Files); err != nil {
			return nil, err
		}
	}
	if o.Tokenizer != "" {
		dir := inst.Spec.Resolve(o.Tokenizer)
		tok, err := inst.Shared.Tokenizer(dir)
		if err != nil {
			return nil, &specs.Error{Pos: inst.Stage.OptionPos("tokenizer"), Msg: err.Error()}
		}
		if e.tmpl, err = chat.Pinned(tok, "", "", nil, inst.Shared.Now); err != nil {
			return nil, &specs.Error{Pos: inst.Stage.OptionPos("tokenizer"), Msg: fmt.Sprintf("tokenizer %s: %v", dir, err)}
		}
	}
	return e, nil
}

// Fingerprint is each side's drafter (the hash of its files) and the
// serving endpoint's identity (API, model, settings): a retrained drafter
// or another target reruns the stage, which then measures only what the
// results table does not hold.
func (e *Evaluate) Fingerprint() (string, error) {
	h := sha256.New()
	for _, s := range e.sides {
		if s.files != "" && s.drafter == "" {
			id, err := accept.DrafterID(s.files)
			if err != nil {
				return "", &specs.Error{Pos: e.inst.Stage.OptionPos("drafters"), Msg: fmt.Sprintf("stage %s: drafter %s: %v", e.inst.Stage.Name, s.name, err)}
			}
			s.drafter = id
		}
		fmt.Fprintf(h, "%s\x00%s\x00%s\x00", s.name, s.drafter, s.ep.Identity)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// sampling names a temperature as the results table keeps it.
func sampling(t float64) string { return "temperature=" + strconv.FormatFloat(t, 'g', -1, 64) }

// Run measures every side at every temperature on the prompts of the
// input, a side at a time, so that each drafter's server holds the GPUs
// alone and stops before the next starts. Every row is stored as it is
// measured: a killed run measures only what it had not.
func (e *Evaluate) Run(ctx context.Context, in stages.Input, out stages.Output) error {
	if _, err := e.Fingerprint(); err != nil {
		return err
	}
	var prompts []prompt
	err := in.Each(ctx, func(rec *conv.Record) error {
		ps, err := e.prompts(rec)
		if err != nil {
			return err
		}
		prompts = append(prompts, ps...)
		return out.Keep(rec)
	})
	if err != nil {
		return err
	}
	// A side that fails (its server will not start, or answers nothing)
	// does not keep the others from being measured; what was measured is
	// kept, and the next run asks only for the rest.
	var errs *multierror.Error
	for i, s := range e.sides {
		for _, t := range e.opts.Temperatures {
			if err := e.measure(ctx, i, s, t, prompts); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				errs = multierror.Append(errs, fmt.Errorf("%s at %s: %w", s.name, sampling(t), err))
				break
			}
		}
		e.release(s)
	}
	if err := errs.ErrorOrNil(); err != nil {
		return err
	}
	return e.finish(ctx)
}

// Release lets go of every side's endpoint not let go of yet: the
// servers eaglet launched for one stop once their last user is done.
func (e *Evaluate) Release() {
	for _, s := range e.sides {
		e.release(s)
	}
}

func (e *Evaluate) release(s *side) {
	e.mu.Lock()
	done := s.released
	s.released = true
	e.mu.Unlock()
	if !done {
		s.ep.Release()
		endpoint.KeepReplicas(s.ep, e.inst.Checkpoints)
	}
}

// Progress shows the requests sent and the rows found again.
func (e *Evaluate) Progress() string {
	return fmt.Sprintf("%d requests sent, %d measurements found again", e.sent.Load(), e.found.Load())
}

// Report names the figures' file, and gives the figures for status and
// the summary.
func (e *Evaluate) Report(r *stages.Report) {
	if e.hash != "" {
		r.MoreOutputs = map[string]string{e.out: e.hash}
	}
	r.Figures, r.Requests = e.figures, int(e.sent.Load())
}

// identity is what makes two measurements the same: the drafter, the
// serving endpoint, the sampling, the answer's cap, and the prompt as sent.
func (e *Evaluate) identity(s *side, t float64, p *prompt) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%d\x00%s", s.drafter, s.ep.Identity, sampling(t), e.opts.MaxTokens, p.hash(s.ep.TakesIDs))
	return hex.EncodeToString(h.Sum(nil))[:32]
}

// keep adds the row under id to the evaluation of side i at t.
func (e *Evaluate) keep(i int, t float64, id string, r accept.Row) {
	e.mu.Lock()
	defer e.mu.Unlock()
	k := sideTemp{i, t}
	e.rows[k] = append(e.rows[k], r)
	e.ids = append(e.ids, id)
}
