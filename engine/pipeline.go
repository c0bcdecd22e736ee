// Package engine turns a validated spec into a DAG of stage instances, plans
// what must run, and runs it against the checkpoint store.
package engine

import (
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// Pipeline is a compiled spec: stage kinds resolved, options decoded and
// expressions type-checked, expanded into instances.
type Pipeline struct {
	Spec  *specs.Spec
	Nodes []*Node // in dependency order
	byID  map[string]*Node
}

// Stage is a compiled stage of the spec.
type Stage struct {
	Spec *specs.Stage
	Kind stages.Kind
	// Options are decoded and compiled; instances resolve copies of them.
	Options any
}

// Node is one instance of a stage: per dataset, or one for all.
type Node struct {
	ID      string
	Stage   *Stage
	Dataset *specs.Dataset
	Needs   []*Node
	Users   []*Node
}

// LoadOption changes how Load reads a spec.
type LoadOption func(*specs.Spec)

// AllowOutside lets the spec write outside its directory, as
// `allow_outside: true` does (the CLI's --allow-outside).
func AllowOutside() LoadOption {
	return func(s *specs.Spec) { s.AllowOutside = true }
}

// Load reads, validates and compiles the spec at path.
func Load(path string, lookup specs.LookupEnv, opts ...LoadOption) (*Pipeline, error) {
	spec, err := specs.Load(path, lookup)
	if spec == nil {
		return nil, err
	}
	for _, o := range opts {
		o(spec)
	}
	p, cerrs := compile(spec)
	if err == nil && cerrs == nil {
		return p, nil
	}
	var all *multierror.Error
	for _, e := range []error{err, cerrs.ErrorOrNil()} {
		if e != nil {
			all = appendFlat(all, e)
		}
	}
	// One bad expression or value must not hide the rest: the stages that
	// did compile are checked per instance too (a max_tokens of -5), as
	// `eaglet validate` does once the spec compiles.
	if cherr := p.Check(); cherr != nil {
		all = appendFlat(all, cherr)
	}
	sortByPosition(all.Errors)
	all.ErrorFormat = specs.FormatErrors
	// Nothing of the spec reaches the caller to redact with, so the errors
	// leave without secrets (a source path built from ${DATA_TOKEN}).
	return nil, spec.RedactError(all)
}

// sortByPosition orders spec errors as they appear in the file, after
// the causes of others (a missing environment variable), so what to fix
// first is read first.
func sortByPosition(errs []error) {
	line := func(e error) int {
		var se *specs.Error
		switch {
		case !errors.As(e, &se):
			return 0
		case se.Cause:
			return -1<<40 + se.Pos.Line*10000 + se.Pos.Col
		}
		return se.Pos.Line*10000 + se.Pos.Col
	}
	sort.SliceStable(errs, func(i, j int) bool { return line(errs[i]) < line(errs[j]) })
}

// compile checks every stage against its kind and expands the DAG,
// returning, with all its problems together, the pipeline of the stages
// that compiled, for checking them too.
func compile(spec *specs.Spec) (*Pipeline, *multierror.Error) {
	var errs *multierror.Error
	compiled := map[string]*Stage{}
	for _, st := range spec.Stages {
		if st.Uses == "" {
			continue // already reported by specs
		}
		cs, err := compileStage(spec, st)
		if err != nil {
			errs = appendFlat(errs, err)
			continue
		}
		compiled[st.Name] = cs
	}
	if err := checkOutputs(spec, compiled); err != nil {
		errs = appendFlat(errs, err)
	}
	p := &Pipeline{Spec: spec, byID: map[string]*Node{}}
	perStage := map[string][]*Node{}
	for _, st := range topoStages(spec) {
		cs := compiled[st.Name]
		if cs == nil {
			continue // its needs' users then lack that edge: fine for checks
		}
		var nodes []*Node
		if st.Foreach == "datasets" {
			for _, ds := range spec.Datasets {
				nodes = append(nodes, &Node{ID: fmt.Sprintf("%s[%s]", st.Name, ds.Name), Stage: cs, Dataset: ds})
			}
		} else {
			nodes = []*Node{{ID: st.Name, Stage: cs}}
		}
		for _, n := range nodes {
			for _, need := range st.Needs {
				for _, up := range perStage[need] {
					if n.Dataset == nil || up.Dataset == nil || up.Dataset == n.Dataset {
						n.Needs = append(n.Needs, up)
						up.Users = append(up.Users, n)
					}
				}
			}
			p.Nodes = append(p.Nodes, n)
			p.byID[n.ID] = n
		}
		perStage[st.Name] = nodes
	}
	return p, errs
}

// appendFlat adds err to errs, flattening nested multierrors.
func appendFlat(errs *multierror.Error, err error) *multierror.Error {
	var me *multierror.Error
	if errors.As(err, &me) {
		return multierror.Append(errs, me.Errors...)
	}
	return multierror.Append(errs, err)
}

func compileStage(spec *specs.Spec, st *specs.Stage) (*Stage, error) {
	kind, ok := stages.Lookup(st.Uses)
	if !ok {
		return nil, spec.Errorf(st.Pos, "stage %s: unknown kind %q%s; kinds: %s", st.Name, st.Uses,
			specs.Suggest(st.Uses, stages.Names()), strings.Join(stages.Names(), ", "))
	}
	opts := kind.Options()
	var errs *multierror.Error
	if err := spec.Decode(st.With, opts); err != nil {
		errs = appendFlat(errs, err)
	}
	instEnv := spec.Env(nil, specs.InputInfo{})
	recEnv := stages.RecordEnv(&conv.Record{}, spec.VarsValue())
	compile := func(e *specs.Expr) error {
		if err := e.CompileOption(instEnv, recEnv); err != nil {
			errs = appendFlat(errs, spec.WithSnippet(err))
		}
		return nil
	}
	walkExprs(reflect.ValueOf(opts), compile)
	if !st.Concurrency.IsZero() {
		compile(&st.Concurrency)
	}
	if errs == nil && kind.Check != nil {
		if err := kind.Check(spec, st, opts); err != nil {
			var me *multierror.Error
			if errors.As(err, &me) {
				for _, e := range me.Errors {
					errs = appendFlat(errs, spec.WithSnippet(e))
				}
			} else {
				errs = appendFlat(errs, spec.WithSnippet(err))
			}
		}
	}
	if err := errs.ErrorOrNil(); err != nil {
		return nil, err
	}
	return &Stage{Spec: st, Kind: kind, Options: opts}, nil
}

// topoStages orders stages so each comes after its needs (the spec has no
// cycles by now), keeping the file's order where it is free.
func topoStages(spec *specs.Spec) []*specs.Stage {
	done := map[string]bool{}
	var out []*specs.Stage
	for len(out) < len(spec.Stages) {
		progressed := false
		for _, st := range spec.Stages {
			if done[st.Name] {
				continue
			}
			ready := true
			for _, n := range st.Needs {
				ready = ready && done[n]
			}
			if ready {
				done[st.Name] = true
				out = append(out, st)
				progressed = true
			}
		}
		if !progressed {
			break
		}
	}
	return out
}

// Node returns the instance with the given ID, or nil.
func (p *Pipeline) Node(id string) *Node { return p.byID[id] }

// Select returns the instances of a stage, optionally of one dataset, in
// order; with downstream set it adds everything that depends on them.
func (p *Pipeline) Select(stage, dataset string, downstream bool) ([]*Node, error) {
	seen := map[*Node]bool{}
	found := false
	for _, n := range p.Nodes {
		if n.Stage.Spec.Name != stage {
			continue
		}
		found = true
		if dataset != "" && (n.Dataset == nil || n.Dataset.Name != dataset) {
			continue
		}
		seen[n] = true
	}
	if !found {
		var names []string
		for _, st := range p.Spec.Stages {
			names = append(names, st.Name)
		}
		return nil, fmt.Errorf("no stage %q in %s; stages: %s", stage, p.Spec.Path, strings.Join(names, ", "))
	}
	if len(seen) == 0 {
		return nil, fmt.Errorf("stage %q has no instance for dataset %q", stage, dataset)
	}
	if downstream {
		for _, n := range p.Nodes {
			for _, up := range n.Needs {
				if seen[up] {
					seen[n] = true
				}
			}
		}
	}
	var out []*Node
	for _, n := range p.Nodes {
		if seen[n] {
			out = append(out, n)
		}
	}
	return out, nil
}

// Selection is what `run --stage` and `plan --stage` pick: the instances
// to bring up to date, with what they need, and those to redo even if up
// to date.
type Selection struct {
	// Nodes are the instances to run; nil runs every one.
	Nodes []*Node
	// Force are the instances to redo.
	Force map[*Node]bool
}

// SelectRun picks stage's instances (dataset's alone, when set); with force
// it redoes them and adds what depends on them, which reruns if their
// output changed.
func (p *Pipeline) SelectRun(stage, dataset string, force bool) (Selection, error) {
	nodes, err := p.Select(stage, dataset, force)
	if err != nil || !force {
		return Selection{Nodes: nodes}, err
	}
	first, _ := p.Select(stage, dataset, false)
	sel := Selection{Nodes: nodes, Force: map[*Node]bool{}}
	for _, n := range first {
		sel.Force[n] = true
	}
	return sel, nil
}

// Ancestors returns the given nodes and everything they depend on, in order.
func (p *Pipeline) Ancestors(nodes []*Node) []*Node {
	seen := map[*Node]bool{}
	var mark func(n *Node)
	mark = func(n *Node) {
		if seen[n] {
			return
		}
		seen[n] = true
		for _, up := range n.Needs {
			mark(up)
		}
	}
	for _, n := range nodes {
		mark(n)
	}
	var out []*Node
	for _, n := range p.Nodes {
		if seen[n] {
			out = append(out, n)
		}
	}
	return out
}

// Inputs returns what a node reads, sorted for stable queries: the IDs of
// its needs, where a per-dataset node reads only its dataset's records of
// a need that is not per dataset (a state.Part of a dedupe over every
// dataset).
func (n *Node) Inputs() []string {
	ids := make([]string, len(n.Needs))
	for i, up := range n.Needs {
		ids[i] = up.ID
		if n.Dataset != nil && up.Dataset == nil {
			ids[i] = state.Part(up.ID, n.Dataset.Name)
		}
	}
	sort.Strings(ids)
	return ids
}
