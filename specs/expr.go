package specs

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"
	"gopkg.in/yaml.v3"
)

// Expr is an expression (github.com/expr-lang/expr) written in a spec, or a
// plain number or string, which is the constant expression of itself. It
// keeps its position so compile errors point into the spec file.
type Expr struct {
	Src    string
	Pos    Pos
	quoted bool
	// kind is the field's kind of expression, bound when decoded.
	kind *ExprKind
	prog *vm.Program
	// val holds the value once Resolve has evaluated an instance-level expression.
	val      any
	resolved bool
}

// NewExpr returns an expression with no position, for defaults and tests.
func NewExpr(src string) Expr { return Expr{Src: src} }

// ConstExpr returns the resolved expression of a constant such as "4096",
// for an option's declared default.
func ConstExpr(src string) (Expr, error) {
	e := NewExpr(src)
	if err := e.Compile(nil); err != nil {
		return e, err
	}
	return e, e.Resolve(nil)
}

// IsZero reports whether the expression was left out of the spec.
func (e Expr) IsZero() bool { return e.Src == "" }

// Compile type-checks the expression against env (a value whose type is the
// environment) and keeps the program. The error is an *Error at the
// expression's position inside the spec file.
func (e *Expr) Compile(env any, opts ...expr.Option) error {
	opts = append([]expr.Option{expr.Env(env)}, opts...)
	prog, err := expr.Compile(e.Src, opts...)
	if err != nil {
		return withSuggestion(e.errorAt(err), env)
	}
	e.prog = prog
	return nil
}

// withSuggestion adds a "did you mean" to an unknown name or var, from
// the names env offers.
func withSuggestion(err error, env any) error {
	var se *Error
	if !errors.As(err, &se) {
		return err
	}
	if i := strings.Index(se.Msg, ": unknown name "); i >= 0 {
		name := strings.Fields(se.Msg[i+len(": unknown name "):])[0]
		se.Msg += suggest(name, envNames(reflect.ValueOf(env)))
	} else if i := strings.Index(se.Msg, ": unknown endpoint "); i >= 0 {
		name := strings.Fields(se.Msg[i+len(": unknown endpoint "):])[0]
		if sug := suggest(name, envNames(envField(reflect.ValueOf(env), "endpoints"))); sug != "" {
			se.Msg = strings.Replace(se.Msg, " (define it under endpoints:)", sug, 1)
		}
	} else if i := strings.Index(se.Msg, ": unknown var "); i >= 0 {
		name := strings.Fields(se.Msg[i+len(": unknown var "):])[0]
		if sug := suggest(name, envNames(envField(reflect.ValueOf(env), "vars"))); sug != "" {
			se.Msg = strings.Replace(se.Msg, " (define it under vars:)", sug, 1)
		}
	}
	return se
}

// envNames lists the names an expression environment offers: a map's keys
// or a struct's fields by their expr tags.
func envNames(v reflect.Value) []string {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		v = v.Elem()
	}
	var names []string
	switch {
	case !v.IsValid():
	case v.Kind() == reflect.Map:
		for _, k := range v.MapKeys() {
			if k.Kind() == reflect.String {
				names = append(names, k.String())
			}
		}
	case v.Kind() == reflect.Struct:
		for _, f := range reflect.VisibleFields(v.Type()) {
			if name, _, _ := strings.Cut(f.Tag.Get("expr"), ","); name != "" {
				names = append(names, name)
			} else if f.IsExported() {
				names = append(names, f.Name)
			}
		}
	}
	return names
}

// envField is the field of a struct environment named name in expressions.
func envField(v reflect.Value, name string) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		v = v.Elem()
	}
	if v.IsValid() && v.Kind() == reflect.Map && v.Type().Key().Kind() == reflect.String {
		return v.MapIndex(reflect.ValueOf(name).Convert(v.Type().Key()))
	}
	if !v.IsValid() || v.Kind() != reflect.Struct {
		return reflect.Value{}
	}
	for _, f := range reflect.VisibleFields(v.Type()) {
		if tag, _, _ := strings.Cut(f.Tag.Get("expr"), ","); tag == name || (tag == "" && f.Name == name) {
			return v.FieldByIndex(f.Index)
		}
	}
	return reflect.Value{}
}

// Eval runs the compiled expression against env.
func (e *Expr) Eval(env any) (any, error) {
	if e.prog == nil {
		return nil, fmt.Errorf("%s: expression %q was not compiled", e.Pos, e.Src)
	}
	out, err := vm.Run(e.prog, env)
	if err != nil {
		return nil, e.errorAt(err)
	}
	return out, nil
}

// EvalInt evaluates the expression and requires a whole number.
func (e *Expr) EvalInt(env any) (int, error) {
	v, err := e.Eval(env)
	if err != nil {
		return 0, err
	}
	switch n := v.(type) {
	case int:
		return n, nil
	case int64:
		return int(n), nil
	case float64:
		if math.IsInf(n, 0) || math.IsNaN(n) {
			return 0, &Error{Pos: e.Pos, Msg: fmt.Sprintf("%q evaluated to %v (a division by zero?); a whole number is needed", e.Src, n)}
		}
		if n != math.Trunc(n) {
			return 0, &Error{Pos: e.Pos, Msg: fmt.Sprintf("%q evaluated to %v; a whole number is needed (use ceil or floor)", e.Src, n)}
		}
		// Expressions compute in float64, where the largest int64 rounds
		// up to 2^63; past that, int() would wrap to a negative number.
		if n == 1<<63 {
			return math.MaxInt64, nil
		}
		if n > 1<<63 || n < -(1<<63) {
			return 0, &Error{Pos: e.Pos, Msg: fmt.Sprintf("%q evaluated to %g, beyond the largest whole number eaglet can count to (%d)", e.Src, n, int64(math.MaxInt64))}
		}
		return int(n), nil
	}
	return 0, &Error{Pos: e.Pos, Msg: fmt.Sprintf("%q evaluated to %v (%T); a number is needed", e.Src, v, v)}
}

// EvalFloat evaluates the expression and requires a number.
func (e *Expr) EvalFloat(env any) (float64, error) {
	v, err := e.Eval(env)
	if err != nil {
		return 0, err
	}
	switch n := v.(type) {
	case int:
		return float64(n), nil
	case int64:
		return float64(n), nil
	case float64:
		return n, nil
	}
	return 0, &Error{Pos: e.Pos, Msg: fmt.Sprintf("%q evaluated to %v (%T); a number is needed", e.Src, v, v)}
}

// Resolve evaluates the expression in env and keeps the value, so an
// instance's options carry numbers, not formulas. An expression whose kind
// wants a whole number must give one: 1.5, an infinity (a division by
// zero) or a string is an error at the expression's position.
func (e *Expr) Resolve(env any) error {
	if e.Kind().whole {
		n, err := e.EvalInt(env)
		if err != nil {
			return err
		}
		e.val, e.resolved = n, true
		return nil
	}
	v, err := e.Eval(env)
	if err != nil {
		return err
	}
	if f, ok := v.(float64); ok && f == float64(int64(f)) {
		v = int(f)
	}
	e.val, e.resolved = v, true
	return nil
}

// Resolved reports whether Resolve has run.
func (e Expr) Resolved() bool { return e.resolved }

// Value returns the resolved value (nil before Resolve).
func (e Expr) Value() any { return e.val }

// Int returns the resolved value as an int (0 when not a number).
func (e Expr) Int() int {
	switch n := e.val.(type) {
	case int:
		return n
	case int64:
		return int(n)
	case float64:
		return int(n)
	}
	return 0
}

// Float returns the resolved value as a float64 (0 when not a number).
func (e Expr) Float() float64 {
	switch n := e.val.(type) {
	case int:
		return float64(n)
	case int64:
		return float64(n)
	case float64:
		return n
	}
	return 0
}

// Errorf returns an *Error at the expression's position, for a stage that
// rejects the value the expression evaluated to.
func (e Expr) Errorf(format string, args ...any) error {
	return &Error{Pos: e.Pos, Msg: fmt.Sprintf(format, args...)}
}

// Reads reports whether the compiled expression refers to the top-level
// name (vars, dataset, input), so a caller can tell which expressions can be
// evaluated before that part of the environment is known.
func (e *Expr) Reads(name string) bool {
	if e.prog == nil {
		return false
	}
	return ast.Find(e.prog.Node(), func(n ast.Node) bool {
		id, ok := n.(*ast.IdentifierNode)
		return ok && id.Value == name
	}) != nil
}

// MarshalJSON writes the resolved value, or the source text of an
// expression that is evaluated per record; fingerprints are made this way.
func (e Expr) MarshalJSON() ([]byte, error) {
	if e.resolved {
		return json.Marshal(e.val)
	}
	return json.Marshal(e.Src)
}

// errorAt turns an expr-lang error into a spec error at the file position of
// the offending character.
func (e *Expr) errorAt(err error) error {
	var fe *file.Error
	pos := e.Pos
	msg := err.Error()
	if errors.As(err, &fe) {
		msg = fe.Message
		// vars is a generated struct; name the missing var, not the Go type.
		if i := strings.Index(msg, " has no field "); i > 0 && strings.HasPrefix(msg, "type struct") {
			name := strings.TrimSpace(msg[i+len(" has no field "):])
			if strings.Contains(msg[:i], "EndpointInfo") {
				// endpoints is generated the same way.
				msg = "unknown endpoint " + name + " (define it under endpoints:)"
			} else {
				msg = "unknown var " + name + " (define it under vars:)"
			}
		}
		if fe.Line <= 1 {
			if e.quoted {
				pos.Col++
			}
			pos.Col += fe.Column
		} else {
			pos.Line += fe.Line
			pos.Col = fe.Column + 1
		}
	}
	return &Error{Pos: pos, Msg: fmt.Sprintf("expression %q: %s", e.Src, msg)}
}

// DatasetInfo is a dataset as expressions see it.
type DatasetInfo struct {
	Name                string  `expr:"name"`
	Source              string  `expr:"source"`
	Format              string  `expr:"format"`
	EstCompletionTokens int     `expr:"est_completion_tokens"`
	EstPromptTokens     int     `expr:"est_prompt_tokens"`
	Weight              float64 `expr:"weight"`
}

// AcceptanceInfo is the store's latest evaluation of a drafter (the
// evaluate stage's: the last drafter it measured, at temperature 0 when it
// measured that), for expressions that aim the next data version where
// the drafter is weak: `acceptance.dataset[dataset.name]`. Before any
// evaluation it is zero, with empty maps.
type AcceptanceInfo struct {
	// Measured is set once an evaluation is in the store.
	Measured bool `expr:"measured"`
	// Drafter is the drafter's name and Sampling the sampling measured.
	Drafter  string `expr:"drafter"`
	Sampling string `expr:"sampling"`
	// Length is the acceptance length over every prompt, and Rate the
	// acceptance rate.
	Length float64 `expr:"length"`
	Rate   float64 `expr:"rate"`
	// Dataset is the acceptance length by dataset, and Context by context
	// bucket ("0-1k", "1k-2k", ..., "32k+").
	Dataset map[string]float64 `expr:"dataset"`
	Context map[string]float64 `expr:"context"`
}

// InputInfo describes an instance's input records.
type InputInfo struct {
	// Records is the number of records the instance receives.
	Records int `expr:"records"`
	// PromptTokensMean is the mean prompt length measured so far, or 0.
	PromptTokensMean float64 `expr:"prompt_tokens_mean"`
}

// varsValue builds a struct value from the spec's vars so expressions are
// type-checked field by field: a typo in vars.max_smaples fails to compile.
func varsValue(vars []Var) any {
	if len(vars) == 0 {
		return struct{}{}
	}
	fields := make([]reflect.StructField, len(vars))
	for i, v := range vars {
		fields[i] = reflect.StructField{
			Name: fmt.Sprintf("V%d", i),
			Type: reflect.TypeOf(v.Value),
			Tag:  reflect.StructTag(fmt.Sprintf(`expr:%q`, v.Name)),
		}
	}
	val := reflect.New(reflect.StructOf(fields)).Elem()
	for i, v := range vars {
		val.Field(i).Set(reflect.ValueOf(v.Value))
	}
	return val.Interface()
}

// EndpointInfo is what instance-level expressions see of an endpoint, so
// that `max_prompt_tokens: "endpoints.target.context - 4096"` follows the
// model and plan counts the prompts that do not fit before the run.
type EndpointInfo struct {
	Name        string `expr:"name"`
	Context     int    `expr:"context"`
	Concurrency int    `expr:"concurrency"`
}

// endpointsValue makes the endpoints a struct with one field per name, as
// varsValue does, so a misspelt endpoint fails to compile.
func endpointsValue(eps []*Endpoint) any {
	if len(eps) == 0 {
		return struct{}{}
	}
	fields := make([]reflect.StructField, len(eps))
	for i, ep := range eps {
		fields[i] = reflect.StructField{Name: fmt.Sprintf("E%d", i), Type: reflect.TypeOf(EndpointInfo{}),
			Tag: reflect.StructTag(fmt.Sprintf(`expr:%q`, ep.Name))}
	}
	val := reflect.New(reflect.StructOf(fields)).Elem()
	for i, ep := range eps {
		val.Field(i).Set(reflect.ValueOf(EndpointInfo{Name: ep.Name, Context: ep.Context, Concurrency: ep.Concurrency.N}))
	}
	return val.Interface()
}

// Var is one entry of the spec's vars.
type Var struct {
	Name  string
	Value any
	Pos   Pos
}

func decodeVars(n *yaml.Node, errs *errorList) []Var {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		errs.node(n, "vars must be a mapping of names to numbers, strings or booleans")
		return nil
	}
	var out []Var
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if !isIdent(k.Value) {
			errs.node(k, "var name %q must be a letter or _ followed by letters, digits or _", k.Value)
			continue
		}
		var val any
		if v.Kind != yaml.ScalarNode || v.Decode(&val) != nil || val == nil {
			errs.node(v, "var %s must be a number, string or boolean", k.Value)
			continue
		}
		if u, ok := val.(uint64); ok {
			val = int(u)
		}
		out = append(out, Var{Name: k.Value, Value: val, Pos: Pos{File: errs.file, Line: k.Line, Col: k.Column}})
	}
	return out
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, r := range s {
		if r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (i > 0 && r >= '0' && r <= '9') {
			continue
		}
		return false
	}
	return !strings.HasPrefix(s, "__")
}
