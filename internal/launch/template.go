package launch

import (
	"fmt"
	"strings"

	"github.com/eaglet-dev/eaglet/specs"
)

// Placeholders are the names an argv item, an env value or the outputs
// glob may use in braces: the shard's file, its index from 0, the number of
// shards, the output directory, the manifest and the shard's version.
var Placeholders = []string{"shard", "index", "count", "out", "manifest", "version"}

// PlaceholderError is an unknown {name} in a template.
type PlaceholderError struct {
	Name string
	// Offset is the byte offset of the opening brace in the template.
	Offset int
}

func (e *PlaceholderError) Error() string {
	return fmt.Sprintf("unknown placeholder {%s}%s; placeholders: {%s} (write {{%s}} for a literal {%s})",
		e.Name, specs.Suggest(e.Name, Placeholders), strings.Join(Placeholders, "} {"), e.Name, e.Name)
}

// expand replaces each {name} in s by vals[name]. Only a brace around a
// name is a placeholder, so JSON ({"a": 1}) and Go or jsonpath templates
// ({{.status}}, {.items[0]}) pass through as written; {{name}} is a
// literal {name}.
func expand(s string, vals map[string]string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		if s[i] != '{' {
			b.WriteByte(s[i])
			i++
			continue
		}
		if strings.HasPrefix(s[i:], "{{") {
			// {{name}}: a literal {name}.
			if name, n := nameAt(s[i+2:]); n > 0 && strings.HasPrefix(s[i+2+n:], "}}") {
				b.WriteString("{" + name + "}")
				i += 2 + n + 2
				continue
			}
		}
		name, n := nameAt(s[i+1:])
		if n == 0 || !strings.HasPrefix(s[i+1+n:], "}") {
			b.WriteByte('{')
			i++
			continue
		}
		v, ok := vals[name]
		if !ok {
			return "", &PlaceholderError{Name: name, Offset: i}
		}
		b.WriteString(v)
		i += 1 + n + 1
	}
	return b.String(), nil
}

// nameAt returns the identifier s starts with and its length (0 for none).
func nameAt(s string) (string, int) {
	n := 0
	for n < len(s) {
		c := s[n]
		if c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || n > 0 && '0' <= c && c <= '9' {
			n++
			continue
		}
		break
	}
	return s[:n], n
}
