// Package filter is the stage that keeps or drops records by ready-made
// rules and expressions over their fields, counting what it dropped and why.
package filter

import (
	"context"
	"fmt"
	"sync"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

func init() {
	stages.Register(stages.Define("filter",
		"drop records a rule rejects, keep those for which `keep` is true and `drop` is false",
		check, newFilter))
}

// Options of filter: ready-made rules, then expressions over record
// fields (see docs/spec.md).
type Options struct {
	Rules *Rules     `yaml:"rules" doc:"ready-made checks, below"`
	Keep  specs.Expr `yaml:"keep" eval:"predicate" doc:"record predicate"`
	Drop  specs.Expr `yaml:"drop" eval:"predicate" doc:"record predicate"`
}

func check(_ *specs.Spec, st *specs.Stage, opts *Options) error {
	if opts.Keep.IsZero() && opts.Drop.IsZero() && opts.Rules.isZero() {
		return &specs.Error{Pos: st.Pos, Msg: fmt.Sprintf("stage %s: filter needs `rules:`, `keep:` or `drop:` in `with:`", st.Name)}
	}
	if opts.Rules != nil {
		return opts.Rules.check(st)
	}
	return nil
}

// Filter keeps records that pass its rules and expressions.
type Filter struct {
	opts  *Options
	vars  any
	marks []markers
}

var (
	_ stages.Mapper    = (*Filter)(nil)
	_ stages.Pure      = (*Filter)(nil)
	_ stages.Estimator = (*Filter)(nil)
)

func newFilter(inst *stages.Instance, o *Options) (stages.Stage, error) {
	f := &Filter{opts: o, vars: inst.Spec.VarsValue()}
	if f.opts.Rules != nil && f.opts.Rules.ThinkMarkers {
		f.marks = targetMarkers(f.opts.Rules, inst.Spec)
	}
	return f, nil
}

// envs holds expression environments between records (FillRecordEnv):
// an expression's result keeps no reference to its environment, so a map
// is free again once Process returns, and Process may run on several
// workers at once.
var envs = sync.Pool{New: func() any { return map[string]any{} }}

// Process drops a record with the rule's name or the expression that
// rejected it as reason.
func (f *Filter) Process(_ context.Context, rec *conv.Record) (stages.Outcome, error) {
	if f.opts.Rules != nil {
		if rule := f.opts.Rules.apply(rec, f.marks); rule != "" {
			return stages.Outcome{Status: stages.Dropped, Reason: rule}, nil
		}
	}
	env := envs.Get().(map[string]any)
	defer envs.Put(env)
	stages.FillRecordEnv(env, rec, f.vars)
	if !f.opts.Keep.IsZero() {
		v, err := f.opts.Keep.Eval(env)
		if err != nil {
			return stages.Outcome{}, err
		}
		if !v.(bool) {
			return stages.Outcome{Status: stages.Dropped, Reason: "keep: " + f.opts.Keep.Src}, nil
		}
	}
	if !f.opts.Drop.IsZero() {
		v, err := f.opts.Drop.Eval(env)
		if err != nil {
			return stages.Outcome{}, err
		}
		if v.(bool) {
			return stages.Outcome{Status: stages.Dropped, Reason: "drop: " + f.opts.Drop.Src}, nil
		}
	}
	return stages.Outcome{Status: stages.Done}, nil
}

// Pure says a record's outcome is the record's alone and cheap to decide.
func (f *Filter) Pure() {}

// Estimate cannot know what will be dropped; it passes the input through.
func (f *Filter) Estimate(in stages.Estimate) (stages.Estimate, error) {
	in.Exact = false
	return in, nil
}
