// Package proc holds what eaglet's two process starters share, the
// handoff's `run:` launches (internal/launch) and the managed servers
// (internal/serve): the {name} placeholders of their commands, and the
// process attributes that keep a started command from outliving eaglet.
package proc

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/eaglet-dev/eaglet/specs"
)

// placeholder matches, leftmost first: "${", which is the environment's
// (the spec layer expands ${VAR} before a command sees it, and one left
// over is the command's own business); a {{name}}, a literal {name}; and a
// {name}. A brace around anything else, as in JSON ({"a": 1}) or a Go or
// jsonpath template ({{.status}}, {.items[0]}), is no placeholder and
// passes as written.
var placeholder = regexp.MustCompile(`\$\{|\{\{[A-Za-z_]\w*\}\}|\{[A-Za-z_]\w*\}`)

// PlaceholderError is an unknown {name} in a template.
type PlaceholderError struct {
	Name string
	// Offset is the byte offset of the opening brace in the template.
	Offset int
	// Known are the names the template may use, in the order to list them.
	Known []string
}

func (e *PlaceholderError) Error() string {
	return fmt.Sprintf("unknown placeholder {%s}%s; placeholders: {%s} (write {{%s}} for a literal {%s})",
		e.Name, specs.Suggest(e.Name, e.Known), strings.Join(e.Known, "} {"), e.Name, e.Name)
}

// Expand replaces each {name} in s by vals[name]; a name vals does not
// hold is a *PlaceholderError listing known.
func Expand(s string, vals map[string]string, known []string) (string, error) {
	var b strings.Builder
	last := 0
	for _, m := range placeholder.FindAllStringIndex(s, -1) {
		b.WriteString(s[last:m[0]])
		last = m[1]
		tok := s[m[0]:m[1]]
		switch {
		case tok == "${":
			b.WriteString(tok)
		case strings.HasPrefix(tok, "{{"):
			b.WriteString(tok[1 : len(tok)-1])
		default:
			v, ok := vals[tok[1:len(tok)-1]]
			if !ok {
				return "", &PlaceholderError{Name: tok[1 : len(tok)-1], Offset: m[0], Known: known}
			}
			b.WriteString(v)
		}
	}
	b.WriteString(s[last:])
	return b.String(), nil
}
