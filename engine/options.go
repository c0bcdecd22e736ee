package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"

	"github.com/eaglet-dev/eaglet/specs"
)

var exprType = reflect.TypeOf(specs.Expr{})

// walkExprs calls fn for every expression field of an options struct
// that the spec sets; each knows its kind (specs.ExprKind).
func walkExprs(v reflect.Value, fn func(e *specs.Expr) error) error {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		fv := v.Field(i)
		if f.Type == exprType {
			e := fv.Addr().Interface().(*specs.Expr)
			if e.IsZero() {
				continue
			}
			if err := fn(e); err != nil {
				return err
			}
			continue
		}
		if err := walkExprs(fv, fn); err != nil {
			return err
		}
	}
	return nil
}

// cloneOptions deep-copies the structs of an options value so each instance
// can resolve its own expressions; slices and maps are shared, read-only.
func cloneOptions(v any) any {
	return cloneValue(reflect.ValueOf(v)).Interface()
}

func cloneValue(v reflect.Value) reflect.Value {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return v
		}
		c := reflect.New(v.Type().Elem())
		c.Elem().Set(cloneValue(v.Elem()))
		return c
	case reflect.Struct:
		c := reflect.New(v.Type()).Elem()
		c.Set(v)
		if v.Type() == exprType {
			return c
		}
		for i := 0; i < v.NumField(); i++ {
			if c.Field(i).CanSet() {
				c.Field(i).Set(cloneValue(v.Field(i)))
			}
		}
		return c
	}
	return v
}

// material returns what of an options value decides a stage's output: every
// field except those tagged fp:"-", with expressions at their resolved value.
func material(v reflect.Value) any {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return nil
		}
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct || v.Type() == exprType {
		return v.Interface()
	}
	m := map[string]any{}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		key := yamlName(f)
		if key == "" || f.Tag.Get("fp") == "-" {
			continue
		}
		if fv := v.Field(i); !fv.IsZero() {
			m[key] = material(fv)
		}
	}
	return m
}

func yamlName(f reflect.StructField) string {
	if !f.IsExported() {
		return ""
	}
	tag := f.Tag.Get("yaml")
	if tag == "-" {
		return ""
	}
	for i := 0; i < len(tag); i++ {
		if tag[i] == ',' {
			return tag[:i]
		}
	}
	return tag
}

// fingerprint hashes the fingerprint material of an instance, returning the
// hash and the canonical JSON (kept so plan can say what changed). conceal
// puts each secret's reference in place of its value before either is made.
func fingerprint(kind string, opts any, extra map[string]any, conceal func(string) string) (string, string) {
	m := map[string]any{"kind": kind}
	if om, ok := material(reflect.ValueOf(opts)).(map[string]any); ok {
		for k, v := range om {
			m[k] = v
		}
	}
	for k, v := range extra {
		m[k] = v
	}
	// Maps marshal with sorted keys, so equal configurations hash equal.
	b, err := json.Marshal(m)
	if err != nil {
		b = []byte(err.Error())
	}
	doc := conceal(string(b))
	sum := sha256.Sum256([]byte(doc))
	return hex.EncodeToString(sum[:12]), doc
}
