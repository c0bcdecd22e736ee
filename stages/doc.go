package stages

import (
	"reflect"
	"strings"

	"github.com/eaglet-dev/eaglet/specs"
)

// OptionDoc is one option of a kind as `eaglet kinds` lists it.
type OptionDoc struct {
	// Name is the key under the stage's `with:`.
	Name string
	// Type is what the value is: string, integer, number, true/false,
	// expression, record expression, record predicate, list or mapping.
	Type string
	// Default is the value the option takes when left out, from the
	// field's `default` tag ("" when it has none).
	Default string
	// Doc is the field's `doc` tag: what the option does.
	Doc string
}

// Docs lists k's options in the order its options struct declares them,
// from the struct's yaml, default and doc tags, so the listing cannot drift from
// what the spec decodes.
func (k Kind) Docs() []OptionDoc {
	t := reflect.TypeOf(k.Options()).Elem()
	var out []OptionDoc
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "" || name == "-" {
			continue
		}
		out = append(out, OptionDoc{Name: name, Type: typeName(f.Type, f.Tag.Get("eval")), Default: f.Tag.Get("default"), Doc: f.Tag.Get("doc")})
	}
	return out
}

var exprType = reflect.TypeOf(specs.Expr{})

// typeName says what a value of t is, in the words of the spec reference.
func typeName(t reflect.Type, eval string) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == exprType && eval == "predicate":
		return "record predicate"
	case t == exprType && eval == "record":
		return "record expression"
	case t == exprType:
		return "expression"
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Int, reflect.Int64, reflect.Uint64:
		return "integer"
	case reflect.Float64:
		return "number"
	case reflect.Bool:
		return "true/false"
	case reflect.Slice:
		return "list"
	case reflect.Map, reflect.Struct:
		return "mapping"
	}
	return t.Kind().String()
}
