package specs

import (
	"fmt"
	"reflect"
	"strconv"

	"gopkg.in/yaml.v3"
)

// parseDefault reads a `default` tag as a value of t (an expression of
// the given kind). Defaults are the values options take when the spec
// leaves their keys out: declared beside the field, listed by `eaglet
// kinds`, and filled in for whoever runs with them (a stage kind's
// constructor, an endpoint's client). A key the spec writes keeps the
// value written, zero included, for its kind's checks to judge. The
// engine fingerprints a stage's options as the spec wrote them, so
// declaring a default never reruns a stage.
func parseDefault(t reflect.Type, s string, kind *ExprKind) (reflect.Value, error) {
	v := reflect.New(t).Elem()
	if t.Kind() == reflect.Pointer {
		elem, err := parseDefault(t.Elem(), s, kind)
		if err != nil {
			return v, err
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(elem)
		return p, nil
	}
	if t == exprType {
		e := Expr{Src: s, kind: kind}
		err := e.CompileOption(nil, nil)
		if err == nil {
			err = e.ResolveOption(nil)
		}
		v.Set(reflect.ValueOf(e))
		return v, err
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(s)
	case reflect.Int, reflect.Int64:
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return v, err
		}
		v.SetInt(n)
	case reflect.Float64:
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return v, err
		}
		v.SetFloat(f)
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return v, err
		}
		v.SetBool(b)
	case reflect.Slice:
		// A list is written as in a spec: [0, 0.7].
		if err := yaml.Unmarshal([]byte(s), v.Addr().Interface()); err != nil {
			return v, err
		}
	default:
		return v, fmt.Errorf("no default for a %s option", t)
	}
	return v, nil
}

// WithDefaults returns a copy of opts, decoded from n (the options as the
// spec wrote them), with every option whose key n leaves out set to the
// default its field's `default` tag declares, in mappings written within
// it too. Stage constructors and endpoint clients get such a copy, and a
// check that must judge the value the stage will run with makes one;
// opts itself is not changed. A nil n is options built in Go rather than
// decoded (a library's caller, a test): a field set is as written, a zero
// field takes its default.
func WithDefaults[O any](opts *O, n *yaml.Node) *O {
	cp := *opts
	fillDefaults(reflect.ValueOf(&cp).Elem(), schemaOf(reflect.TypeFor[O]()), n)
	return &cp
}

// fillDefaults sets the options of v that n leaves out to their defaults.
// v is a copy: a mapping option written within it is copied before it is
// filled, and a default pointer is a pointer of its own, so no two copies
// share what either changes.
func fillDefaults(v reflect.Value, s *schema, n *yaml.Node) {
	for _, o := range s.fields {
		f := v.FieldByIndex(o.index)
		val, ok := written(n, o.key)
		if n == nil {
			ok = !f.IsZero()
		}
		switch {
		case o.nested != nil && ok:
			if f.Kind() == reflect.Pointer {
				if f.IsNil() {
					continue
				}
				p := reflect.New(f.Type().Elem())
				p.Elem().Set(f.Elem())
				f.Set(p)
				f = p.Elem()
			}
			fillDefaults(f, o.nested, val)
		case !o.hasDefault || ok:
		case o.def.Kind() == reflect.Pointer:
			p := reflect.New(o.def.Type().Elem())
			p.Elem().Set(o.def.Elem())
			f.Set(p)
		case o.def.Kind() == reflect.Slice:
			f.Set(reflect.AppendSlice(reflect.MakeSlice(o.def.Type(), 0, o.def.Len()), o.def))
		default:
			f.Set(o.def)
		}
	}
}
