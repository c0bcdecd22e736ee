package specs

import (
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"

	"github.com/hashicorp/go-multierror"
	"gopkg.in/yaml.v3"
)

// schema is what the tags of an options struct declare, read once per
// type: the decoder, the defaults, the checks of written values and the
// reference all read it, so none of them parses a tag of its own.
type schema struct {
	fields []*optionDecl
	byKey  map[string]*optionDecl
}

// optionDecl is one field of an options struct: its yaml key and what its
// `default`, `eval`, `enum` and `min` tags declare.
type optionDecl struct {
	key   string
	index []int
	typ   reflect.Type
	// def is the `default` tag parsed as the field's type; hasDefault is
	// set when there is one.
	def        reflect.Value
	defText    string
	hasDefault bool
	// eval is the kind of an Expr field (plain when it has no `eval` tag).
	eval *ExprKind
	// enum is the values a string option may take, from its `enum` tag.
	enum Enum
	// min is the least value a number option may be written with, from
	// its `min` tag: "1" (1 or more) or ">0" (above 0).
	min *minimum
	// nested is the schema of a mapping option decoded into a struct of
	// its own (a pointer to one), whose defaults and checks apply within
	// it when it is written.
	nested *schema
}

var schemas sync.Map // reflect.Type -> *schema

// schemaOf returns the schema of struct type t. A tag that does not fit
// its field panics: a declaration is wrong, and every test that registers
// it says so.
func schemaOf(t reflect.Type) *schema {
	if s, ok := schemas.Load(t); ok {
		return s.(*schema)
	}
	s, _ := schemas.LoadOrStore(t, buildSchema(t))
	return s.(*schema)
}

// CheckOptions reads the tags of the options struct O now, so a bad one
// fails when a kind or API registers rather than when it runs.
func CheckOptions[O any]() { schemaOf(reflect.TypeFor[O]()) }

func buildSchema(t reflect.Type) *schema {
	s := &schema{byKey: map[string]*optionDecl{}}
	for _, f := range optionFields(t) {
		o := &optionDecl{key: yamlKey(f), index: f.Index, typ: f.Type}
		fail := func(format string, args ...any) {
			panic(fmt.Sprintf("specs: %s.%s: %s", t.Name(), f.Name, fmt.Sprintf(format, args...)))
		}
		if tag, ok := f.Tag.Lookup("eval"); ok {
			if f.Type != exprType {
				fail("eval:%q on a %s; only a specs.Expr is an expression", tag, f.Type)
			}
			if o.eval = exprKinds[tag]; o.eval == nil {
				fail("eval:%q is no kind of expression; use one of %s", tag, strings.Join(exprKindNames(), ", "))
			}
		} else if f.Type == exprType {
			o.eval = exprKinds[""]
		}
		if tag, ok := f.Tag.Lookup("enum"); ok {
			if f.Type.Kind() != reflect.String {
				fail("enum on a %s; only a string option has values to choose from", f.Type)
			}
			e, err := parseEnum(tag)
			if err != nil {
				fail("enum %q: %v", tag, err)
			}
			o.enum = e
		}
		if tag, ok := f.Tag.Lookup("min"); ok {
			m, err := parseMin(tag, f.Type)
			if err != nil {
				fail("min %q: %v", tag, err)
			}
			o.min = m
		}
		if st := nestedStruct(f.Type); st != nil {
			o.nested = schemaOf(st)
		}
		if tag, ok := f.Tag.Lookup("default"); ok {
			if o.nested != nil {
				fail("default on a mapping; declare the defaults of its keys on its own fields")
			}
			v, err := parseDefault(f.Type, tag, o.eval)
			if err != nil {
				fail("default %q: %v", tag, err)
			}
			if o.enum != nil && !o.enum.has(tag) {
				fail("default %q is not one of its values %s", tag, o.enum)
			}
			o.def, o.defText, o.hasDefault = v, tag, true
		}
		s.fields = append(s.fields, o)
		s.byKey[o.key] = o
	}
	return s
}

// nestedStruct returns the struct type of a mapping option with keys of
// its own (a struct or a pointer to one), nil for any other option:
// expressions, positions and types that decode themselves are values.
func nestedStruct(t reflect.Type) reflect.Type {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || t == exprType || t == posType {
		return nil
	}
	if reflect.PointerTo(t).Implements(reflect.TypeFor[yaml.Unmarshaler]()) {
		return nil
	}
	return t
}

// written returns the value of key in mapping n, the options as the spec
// wrote them, and whether it is there. A null is no value: it leaves the
// option to its default, as leaving the key out does.
func written(n *yaml.Node, key string) (*yaml.Node, bool) {
	_, v := mapEntry(n, key)
	return v, v != nil && v.Tag != "!!null"
}

// checkWritten reports, at its value, every option of v (decoded from n)
// that its tags refuse whatever its owner checks: a number below its
// `min`, a value outside its `enum`, and an empty string, which no option
// takes as a value of its own (a default, or what an option left out
// does, is had by leaving the key out). what names the owner in messages
// ("stage dedupe"), file the spec; within is the mapping's own keys, as a
// message names an option inside it ("budget ").
func checkWritten(v reflect.Value, s *schema, n *yaml.Node, file, what, within string) []error {
	var errs []error
	for _, o := range s.fields {
		label := within + o.key
		val, ok := written(n, o.key)
		if !ok {
			continue
		}
		f := v.FieldByIndex(o.index)
		pos := Pos{File: file, Line: val.Line, Col: val.Column}
		switch {
		case o.nested != nil:
			if f.Kind() == reflect.Pointer {
				if f.IsNil() {
					continue
				}
				f = f.Elem()
			}
			errs = append(errs, checkWritten(f, o.nested, val, file, what, label+" ")...)
		case o.min != nil:
			if n := number(f); !o.min.allows(n) {
				errs = append(errs, &Error{Pos: pos, Msg: fmt.Sprintf("%s: %s is %v; use %s", what, label, n, o.min)})
			}
		case o.enum != nil && !o.enum.has(f.String()):
			errs = append(errs, o.enum.errorAt(pos, what, label, f.String()))
		case o.typ.Kind() == reflect.String && f.String() == "" && o.hasDefault:
			errs = append(errs, &Error{Pos: pos, Msg: fmt.Sprintf("%s: %s is empty; write a value, or leave the key out for the default, %s", what, label, o.defText)})
		case o.typ.Kind() == reflect.String && f.String() == "":
			errs = append(errs, &Error{Pos: pos, Msg: fmt.Sprintf("%s: %s is empty; write a value, or leave the key out", what, label)})
		}
	}
	return errs
}

// CheckWritten reports every option of opts, the stage's `with:` as
// decoded, whose value its field's tags refuse (see checkWritten), each
// at its value; nil when there is none.
func (st *Stage) CheckWritten(opts any) error {
	v := reflect.ValueOf(opts)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	var errs *multierror.Error
	for _, err := range checkWritten(v, schemaOf(v.Type()), st.With, st.Pos.File, "stage "+st.Name, "") {
		errs = multierror.Append(errs, err)
	}
	return errs.ErrorOrNil()
}

// minimum is a number option's least value.
type minimum struct {
	n         float64
	exclusive bool
}

func parseMin(tag string, t reflect.Type) (*minimum, error) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Float64:
	default:
		return nil, fmt.Errorf("on a %s; only a number has a least value", t)
	}
	num, exclusive := strings.CutPrefix(tag, ">")
	n, err := strconv.ParseFloat(num, 64)
	return &minimum{n: n, exclusive: exclusive}, err
}

func (m *minimum) allows(n float64) bool { return n > m.n || n == m.n && !m.exclusive }

// String says which values to use: "1 or more", "a number above 0".
func (m *minimum) String() string {
	if m.exclusive {
		return fmt.Sprintf("a number above %v", m.n)
	}
	return fmt.Sprintf("%v or more", m.n)
}

// number is the value of a number option (through its pointer).
func number(v reflect.Value) float64 {
	if v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return 0
		}
		v = v.Elem()
	}
	if v.Kind() == reflect.Float64 {
		return v.Float()
	}
	return float64(v.Int())
}
