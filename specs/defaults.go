package specs

import (
	"fmt"
	"reflect"
	"strconv"
	"sync"
)

// defaults are the values options take when the spec leaves them out,
// read from their fields' `default` tags: declared beside the field,
// listed by `eaglet kinds`, and filled in for whoever runs with them (a
// stage kind's constructor, an endpoint's client). The engine fingerprints
// a stage's options as the spec wrote them, so declaring a default never
// reruns a stage.
type defaults []fieldDefault

type fieldDefault struct {
	index []int
	value reflect.Value
}

// parseDefaults reads the `default` tags of an options struct. A tag that
// does not parse as its field's type panics: a declaration is wrong, and
// every test that registers it says so.
func parseDefaults(t reflect.Type) defaults {
	var d defaults
	for _, f := range optionFields(t) {
		tag, ok := f.Tag.Lookup("default")
		if !ok {
			continue
		}
		v, err := parseDefault(f.Type, tag)
		if err != nil {
			panic(fmt.Sprintf("specs: %s.%s: default %q: %v", t.Name(), f.Name, tag, err))
		}
		d = append(d, fieldDefault{index: f.Index, value: v})
	}
	return d
}

func parseDefault(t reflect.Type, s string) (reflect.Value, error) {
	v := reflect.New(t).Elem()
	if t.Kind() == reflect.Pointer {
		elem, err := parseDefault(t.Elem(), s)
		if err != nil {
			return v, err
		}
		p := reflect.New(t.Elem())
		p.Elem().Set(elem)
		return p, nil
	}
	if t == exprType {
		e, err := ConstExpr(s)
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
	default:
		return v, fmt.Errorf("no default for a %s option", t)
	}
	return v, nil
}

var defaultsCache sync.Map // reflect.Type -> defaults

// CheckDefaults parses the `default` tags of the options struct O now, so
// a bad tag fails when a kind or API registers rather than when it runs.
func CheckDefaults[O any]() { defaultsOf(reflect.TypeFor[O]()) }

func defaultsOf(t reflect.Type) defaults {
	if d, ok := defaultsCache.Load(t); ok {
		return d.(defaults)
	}
	d, _ := defaultsCache.LoadOrStore(t, parseDefaults(t))
	return d.(defaults)
}

// WithDefaults returns a copy of opts with every option the spec left out
// set to the default its field's `default` tag declares, for a check that
// must judge the value the stage will run with. Stage constructors and
// endpoint clients get such a copy.
func WithDefaults[O any](opts *O) *O {
	cp := *opts
	v := reflect.ValueOf(&cp).Elem()
	for _, fd := range defaultsOf(reflect.TypeFor[O]()) {
		f := v.FieldByIndex(fd.index)
		switch {
		case !isZero(f):
		case fd.value.Kind() == reflect.Pointer:
			// A pointer of its own, so no two copies share the default.
			p := reflect.New(fd.value.Type().Elem())
			p.Elem().Set(fd.value.Elem())
			f.Set(p)
		default:
			f.Set(fd.value)
		}
	}
	return &cp
}

// isZero reports whether an option was left out: by the type's own IsZero
// when it has one (an expression), else Go's zero value.
func isZero(f reflect.Value) bool {
	if z, ok := f.Interface().(interface{ IsZero() bool }); ok {
		return z.IsZero()
	}
	return f.IsZero()
}
