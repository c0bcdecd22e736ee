package serve

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/eaglet-dev/eaglet/specs"
)

// placeholder matches, leftmost first: "${", which is the environment's
// (the spec layer expands ${VAR} before a launch sees it, and a literal
// one left over is the command's own business); a {{name}}, a literal
// {name}; and a {name}. A brace around anything else, as in JSON or a
// jsonpath ({.status.podIP}), is no placeholder and passes as written.
var placeholder = regexp.MustCompile(`\$\{|\{\{[A-Za-z_]\w*\}\}|\{[A-Za-z_]\w*\}`)

// expand replaces each {name} in s by vals[name], and fails on a name
// vals does not hold.
func expand(s string, vals map[string]string) (string, error) {
	var unknown string
	out := placeholder.ReplaceAllStringFunc(s, func(m string) string {
		switch {
		case m == "${":
			return m
		case strings.HasPrefix(m, "{{"):
			return m[1 : len(m)-1]
		}
		v, ok := vals[m[1:len(m)-1]]
		if !ok && unknown == "" {
			unknown = m[1 : len(m)-1]
		}
		return v
	})
	if unknown != "" {
		names := slices.Sorted(maps.Keys(vals))
		return "", fmt.Errorf("unknown placeholder {%s}%s in %q; here: {%s} (write {{%s}} for a literal {%s})",
			unknown, specs.Suggest(unknown, names), s, strings.Join(names, "} {"), unknown, unknown)
	}
	return out, nil
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
