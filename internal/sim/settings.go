package sim

import (
	"flag"
	"fmt"
	"reflect"
	"strconv"
)

// Flags binds cfg's fields to flags of fs named by their flag tags, with
// their defaults and docs, for sim-server.
func (cfg *Config) Flags(fs *flag.FlagSet) { bindFlags(fs, cfg) }

// fillDefaults sets the zero fields of *settings, a Config or a Drafter,
// to their default tags.
func fillDefaults(settings any) {
	v := reflect.ValueOf(settings).Elem()
	for i, f := range reflect.VisibleFields(v.Type()) {
		if d, ok := f.Tag.Lookup("default"); ok && v.Field(i).IsZero() {
			// The tags are this package's own and parse (TestConfig_OneDeclaration).
			_ = setString(v.Field(i), d)
		}
	}
}

// bindFlags binds the fields of *settings, a Config or a Drafter, to flags
// of fs named by their flag tags, with their defaults and docs.
func bindFlags(fs *flag.FlagSet, settings any) {
	v := reflect.ValueOf(settings).Elem()
	for i, f := range reflect.VisibleFields(v.Type()) {
		name, doc := f.Tag.Get("flag"), f.Tag.Get("doc")
		if name == "" {
			continue
		}
		if d, ok := f.Tag.Lookup("default"); ok {
			_ = setString(v.Field(i), d)
		}
		switch p := v.Field(i).Addr().Interface().(type) {
		case *int:
			fs.IntVar(p, name, *p, doc)
		case *uint64:
			fs.Uint64Var(p, name, *p, doc)
		case *float64:
			fs.Float64Var(p, name, *p, doc)
		}
	}
}

// setString parses s into v, a field of one of Config's kinds.
func setString(v reflect.Value, s string) error {
	switch v.Kind() {
	case reflect.Int:
		n, err := strconv.Atoi(s)
		v.SetInt(int64(n))
		return err
	case reflect.Uint64:
		n, err := strconv.ParseUint(s, 10, 64)
		v.SetUint(n)
		return err
	case reflect.Float64:
		x, err := strconv.ParseFloat(s, 64)
		v.SetFloat(x)
		return err
	}
	return fmt.Errorf("sim: a setting of kind %s", v.Kind())
}
