package serve

import (
	"maps"
	"slices"

	"github.com/eaglet-dev/eaglet/internal/proc"
)

// expand replaces each {name} in s by vals[name] (proc.Expand), and
// fails on a name vals does not hold; the caller names the option.
func expand(s string, vals map[string]string) (string, error) {
	return proc.Expand(s, vals, slices.Sorted(maps.Keys(vals)))
}

// expandAll expands every item of argv.
func expandAll(argv []string, vals map[string]string) ([]string, error) {
	out := make([]string, len(argv))
	for i, a := range argv {
		var err error
		if out[i], err = expand(a, vals); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// placeholderCheck gives every name a value, to check a template before
// the values are known.
func placeholderCheck(names []string) map[string]string {
	vals := make(map[string]string, len(names))
	for _, n := range names {
		vals[n] = ""
	}
	return vals
}
