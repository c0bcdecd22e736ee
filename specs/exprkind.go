package specs

import (
	"sort"

	"github.com/expr-lang/expr"
)

// ExprKind is what an expression option computes and when it is
// evaluated, bound to its field by the field's `eval` tag. This table is
// the only place the kinds are told apart: the decoder binds each Expr it
// reads to its field's kind, the engine compiles and resolves every
// expression through the Expr itself, and the reference names the type
// from it.
type ExprKind struct {
	// Name is the `eval` tag that declares the kind ("" for a field
	// without one).
	Name string
	// PerRecord is set when the stage evaluates the expression for each
	// record, against stages.RecordEnv; otherwise the engine resolves it
	// once per instance, against Spec.Env, before building the stage.
	PerRecord bool
	// Doc names the type in the spec reference.
	Doc string
	// compile are the expr-lang options that type-check the result.
	compile []expr.Option
	// whole requires a whole number when the expression is resolved.
	whole bool
}

var exprKinds = map[string]*ExprKind{
	"":          {Doc: "expression"},
	"int":       {Name: "int", Doc: "expression", compile: []expr.Option{expr.AsFloat64()}, whole: true},
	"number":    {Name: "number", Doc: "expression", compile: []expr.Option{expr.AsFloat64()}},
	"predicate": {Name: "predicate", PerRecord: true, Doc: "record predicate", compile: []expr.Option{expr.AsBool()}},
}

func exprKindNames() []string {
	var names []string
	for n := range exprKinds {
		if n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	return names
}

// Kind returns the expression's kind, the plain instance-level one for an
// expression not decoded into a tagged field.
func (e *Expr) Kind() *ExprKind {
	if e.kind == nil {
		return exprKinds[""]
	}
	return e.kind
}

// CompileOption compiles an option's expression as its kind says: against
// record, the environment of per-record expressions, or instance, that of
// instance-level ones, and type-checked to the kind's result.
func (e *Expr) CompileOption(instance, record any) error {
	k := e.Kind()
	if k.PerRecord {
		return e.Compile(record, k.compile...)
	}
	return e.Compile(instance, k.compile...)
}

// ResolveOption resolves an option's instance-level expression in env, a
// whole number where its kind wants one; a per-record expression is left
// to the stage, which evaluates it for each record.
func (e *Expr) ResolveOption(env any) error {
	if e.Kind().PerRecord {
		return nil
	}
	return e.Resolve(env)
}
