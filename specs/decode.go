package specs

import (
	"fmt"
	"reflect"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"
)

// decoder fills tagged Go structs from yaml.v3 nodes, keeping positions and
// reporting every unknown key and type mismatch instead of stopping at the first.
type decoder struct {
	errs *errorList
}

var (
	exprType = reflect.TypeOf(Expr{})
	nodeType = reflect.TypeOf((*yaml.Node)(nil))
	posType  = reflect.TypeOf(Pos{})
)

// Known returns the yaml keys a struct type accepts, for hints and docs.
func Known(t reflect.Type) []string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var keys []string
	for _, f := range optionFields(t) {
		keys = append(keys, yamlKey(f))
	}
	return keys
}

// optionFields are the fields of struct type t a spec sets, by their yaml
// keys, in declaration order: those of a struct embedded with
// `yaml:",inline"` (options several APIs share) take its place.
func optionFields(t reflect.Type) []reflect.StructField {
	var out []reflect.StructField
	for _, f := range reflect.VisibleFields(t) {
		if yamlKey(f) != "" {
			out = append(out, f)
		}
	}
	return out
}

func yamlKey(f reflect.StructField) string {
	tag := f.Tag.Get("yaml")
	if tag == "-" || !f.IsExported() {
		return ""
	}
	return strings.Split(tag, ",")[0]
}

// decode decodes n into v (a pointer), reporting problems to d.errs.
func (d *decoder) decode(n *yaml.Node, v reflect.Value) {
	if n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	switch {
	case v.Type() == nodeType:
		v.Set(reflect.ValueOf(n))
		return
	case v.Type() == exprType:
		if n.Kind != yaml.ScalarNode {
			d.errs.node(n, "expected an expression or a number, got a %s", kindName(n))
			return
		}
		v.Set(reflect.ValueOf(Expr{Src: n.Value, Pos: Pos{File: d.errs.file, Line: n.Line, Col: n.Column}, quoted: n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0}))
		return
	}
	if u, ok := v.Addr().Interface().(yaml.Unmarshaler); ok {
		switch err := n.Decode(u); {
		case err == nil:
		case v.Kind() == reflect.Struct:
			d.errs.node(n, "expected %s, got %q", typeName(v.Type()), n.Value)
		default:
			// A list or a scalar of its own reading (a launch's gpus: a
			// list or a count) says best what it wants.
			d.errs.node(n, "%s", strings.TrimPrefix(err.Error(), "yaml: "))
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if n.Tag == "!!null" {
			return
		}
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.decode(n, v.Elem())
	case reflect.Struct:
		d.decodeStruct(n, v)
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.String && n.Kind == yaml.ScalarNode {
			// A lone string where a list is expected: accept `needs: load`.
			v.Set(reflect.ValueOf([]string{n.Value}))
			return
		}
		if n.Kind != yaml.SequenceNode {
			d.errs.node(n, "expected a list, got a %s", kindName(n))
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.decode(item, s.Index(i))
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.errs.node(n, "expected a mapping, got a %s", kindName(n))
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			val := reflect.New(v.Type().Elem()).Elem()
			d.decode(n.Content[i+1], val)
			m.SetMapIndex(reflect.ValueOf(n.Content[i].Value), val)
		}
		v.Set(m)
	default:
		d.decodeScalar(n, v)
	}
}

func (d *decoder) decodeScalar(n *yaml.Node, v reflect.Value) {
	if v.Kind() != reflect.Interface && n.Kind != yaml.ScalarNode {
		d.errs.node(n, "expected %s, got a %s", typeName(v.Type()), kindName(n))
		return
	}
	err := n.Decode(v.Addr().Interface())
	if err != nil && n.Kind == yaml.ScalarNode && n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
		switch v.Kind() {
		case reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
			// `stream: "${STREAM:-false}"`: quoted, as the environment
			// makes every value a string, so read it as docker-compose does,
			// by the type the option wants.
			plain := *n
			plain.Style, plain.Tag = 0, ""
			err = plain.Decode(v.Addr().Interface())
		}
	}
	if err != nil {
		if v.Kind() == reflect.Interface {
			// Any value fits, so yaml's own reason is the one to give.
			d.errs.node(n, "cannot read this value: %s", strings.TrimPrefix(err.Error(), "yaml: "))
			return
		}
		d.errs.node(n, "expected %s, got %q", typeName(v.Type()), n.Value)
	}
}

func (d *decoder) decodeStruct(n *yaml.Node, v reflect.Value) {
	t := v.Type()
	if n.Kind != yaml.MappingNode {
		// Name what the mapping holds: `rules: [truncated]` for
		// `rules: {truncated: true}` is the usual slip.
		d.errs.node(n, "expected a mapping (keys: %s), got a %s", strings.Join(sorted(Known(t)), ", "), kindName(n))
		return
	}
	if f, ok := t.FieldByName("Pos"); ok && f.Type == posType && len(f.Index) == 1 {
		v.FieldByIndex(f.Index).Set(reflect.ValueOf(Pos{File: d.errs.file, Line: n.Line, Col: n.Column}))
	}
	s := schemaOf(t)
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		key, val := n.Content[i], n.Content[i+1]
		o, ok := s.byKey[key.Value]
		if !ok {
			d.errs.node(key, "unknown key %q%s; valid keys: %s", key.Value, suggest(key.Value, Known(t)), strings.Join(sorted(Known(t)), ", "))
			continue
		}
		if seen[key.Value] {
			d.errs.node(key, "key %q appears twice", key.Value)
			continue
		}
		seen[key.Value] = true
		f := v.FieldByIndex(o.index)
		d.decode(val, f)
		if o.eval != nil {
			f.Addr().Interface().(*Expr).kind = o.eval
		}
	}
}

func sorted(s []string) []string {
	s = append([]string(nil), s...)
	sort.Strings(s)
	return s
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "mapping"
	case yaml.SequenceNode:
		return "list"
	case yaml.ScalarNode:
		return fmt.Sprintf("value %q", n.Value)
	}
	return "node"
}

func typeName(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int, reflect.Int64:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Struct:
		if t.Name() == "Concurrency" {
			return "a number or auto"
		}
	}
	return t.String()
}
