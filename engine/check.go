package engine

import (
	"reflect"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

// Check builds every instance as a run would, without reading data or the
// state store, and reports every problem at once. Options are evaluated per
// dataset, so a spec that compiles can still fail for one dataset
// (max_tokens: "dataset.est_completion_tokens - 500"). Instances with an
// expression that reads input are left to Plan, which counts or estimates
// the records each receives; checked here with none, they would fail
// for want of data, not for a mistake.
func (p *Pipeline) Check() error {
	var errs *multierror.Error
	shared := &stages.Shared{}
	// A problem that does not depend on the dataset fails every instance
	// of its stage alike: report it once, naming them all.
	var keys []string
	alike := map[string][]*Node{}
	first := map[string]error{}
	for _, n := range p.Nodes {
		if readsInput(n) {
			continue
		}
		pr, err := p.prepare(n, specs.InputInfo{}, shared, func(string, ...any) {}, true, nil)
		if err == nil {
			// What a stage sets up only when it runs (a tokenizer) is
			// checked here too, before anything runs.
			err = start(pr.stage)
		}
		if err == nil {
			continue
		}
		key := n.Stage.Spec.Name + "\x00" + err.Error()
		if _, seen := first[key]; !seen {
			keys = append(keys, key)
			first[key] = err
		}
		alike[key] = append(alike[key], n)
	}
	for _, key := range keys {
		errs = multierror.Append(errs, p.instancesError(alike[key], first[key]))
	}
	if errs == nil {
		return nil
	}
	sortByPosition(errs.Errors)
	errs.ErrorFormat = specs.FormatErrors
	return errs
}

// readsInput reports whether an expression of n reads input. Per-record
// expressions cannot (their environment has no input), so all are asked.
func readsInput(n *Node) bool {
	reads := n.Stage.Spec.Concurrency.Reads("input")
	walkExprs(reflect.ValueOf(n.Stage.Options), func(e *specs.Expr) error {
		reads = reads || e.Reads("input")
		return nil
	})
	return reads
}
