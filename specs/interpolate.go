package specs

import (
	"strings"

	"gopkg.in/yaml.v3"
)

// LookupEnv reads an environment variable; os.LookupEnv in production.
type LookupEnv func(name string) (string, bool)

// interpolate replaces ${VAR} and ${VAR:-default} in every scalar value of
// the tree (not in keys), as docker-compose does; $$ is a literal $. Values
// that came from the environment and look secret are remembered, each with
// its reference, so they can be scrubbed from anything eaglet prints and
// stored as the reference rather than the value.
func interpolate(n *yaml.Node, lookup LookupEnv, errs *errorList, secrets map[string]string) {
	switch n.Kind {
	case yaml.DocumentNode, yaml.SequenceNode:
		for _, c := range n.Content {
			interpolate(c, lookup, errs, secrets)
		}
	case yaml.MappingNode:
		for i := 1; i < len(n.Content); i += 2 {
			interpolate(n.Content[i], lookup, errs, secrets)
		}
	case yaml.ScalarNode:
		if strings.Contains(n.Value, "$") {
			n.Value = expand(n, lookup, errs, secrets)
			if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) == 0 {
				// A plain ${N} is typed by what it expands to, as if written
				// there: a number stays a number.
				n.Tag = ""
			}
		}
	}
}

func expand(n *yaml.Node, lookup LookupEnv, errs *errorList, secrets map[string]string) string {
	s := n.Value
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' {
			b.WriteByte(s[i])
			continue
		}
		if i+1 < len(s) && s[i+1] == '$' {
			b.WriteByte('$')
			i++
			continue
		}
		if i+1 >= len(s) || s[i+1] != '{' {
			b.WriteByte('$')
			continue
		}
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			errs.node(n, "unclosed ${ in %q; write $$ for a literal $", s)
			return s
		}
		ref := s[i+2 : i+end]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !isIdent(name) {
			errs.node(n, "bad variable reference ${%s}: use ${NAME} or ${NAME:-default}", ref)
			return s
		}
		val, ok := lookup(name)
		switch {
		case ok && val != "":
			if ref := "${" + name + "}"; looksSecret(name) || looksSecretValue(val) {
				// The same value under two names is stored as one of them,
				// the same one whatever the order of the spec.
				if old, ok := secrets[val]; !ok || ref < old {
					secrets[val] = ref
				}
			}
			b.WriteString(val)
		case hasDef:
			b.WriteString(def)
		case ok:
			// Set but empty, with no default: an empty value is what was asked for.
		default:
			col := n.Column + i
			if n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle) != 0 {
				col++
			}
			errs.cause(n.Line, col, "environment variable %s is not set; set it or write ${%s:-default}", name, name)
		}
		i += end
	}
	return b.String()
}

// looksSecret reports whether an environment variable's name says its value
// must never be printed or stored.
func looksSecret(name string) bool {
	up := strings.ToUpper(name)
	for _, w := range []string{"KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH", "COOKIE"} {
		if strings.Contains(up, w) {
			return true
		}
	}
	return false
}

// looksSecretValue reports whether a value is shaped like an API token
// whatever the variable carrying it is called: Hugging Face's hf_ and
// OpenAI-style sk- keys.
func looksSecretValue(v string) bool {
	return strings.HasPrefix(v, "hf_") || strings.HasPrefix(v, "sk-")
}
