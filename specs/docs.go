package specs

import (
	"reflect"
)

// OptionDoc is one option of a stage kind or an endpoint API as `eaglet
// kinds` lists it.
type OptionDoc struct {
	// Name is the key under a stage's `with:` or an endpoint's `options:`.
	Name string
	// Type is what the value is: string, integer, number, true/false,
	// expression, record predicate, list, mapping, or the values of an
	// enum ("drop or clip").
	Type string
	// Default is the value the option takes when left out, from the
	// field's `default` tag ("" when it has none).
	Default string
	// Doc is the field's `doc` tag: what the option does.
	Doc string
}

// OptionDocs lists the options of an options struct (or a pointer to one)
// in the order it declares them, from its yaml, default, eval, enum and
// doc tags, so the listing cannot drift from what the spec decodes.
func OptionDocs(opts any) []OptionDoc {
	t := reflect.TypeOf(opts)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []OptionDoc
	for _, o := range schemaOf(t).fields {
		f := t.FieldByIndex(o.index)
		out = append(out, OptionDoc{Name: o.key, Type: o.docType(), Default: o.defText, Doc: f.Tag.Get("doc")})
	}
	return out
}

// docType says what a value of the option is, in the words of the spec
// reference.
func (o *optionDecl) docType() string {
	switch {
	case o.eval != nil:
		return o.eval.Doc
	case o.enum != nil:
		return o.enum.or()
	}
	t := o.typ
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
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
