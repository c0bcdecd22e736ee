package specs

import (
	"bytes"
	"strings"

	"gopkg.in/yaml.v3"
)

// quotedRef is a ${...} scalar that quoteFlowRefs wrapped in quotes, at
// its 1-based line and its column in the quoted source.
type quotedRef struct{ line, col int }

// quoteFlowRefs puts double quotes around plain scalars that start with
// ${ inside flow collections ({...} or [...]), where YAML reads the { as a
// nested mapping: `{stream: ${STREAM:-false}}` is a syntax error as
// written, though docker-compose users rightly expect it to work. It is
// tried only when the spec does not parse as is. It returns the new source
// and where each wrapped scalar starts in it; scalars holding a quote or a
// backslash are left alone.
func quoteFlowRefs(src []byte) ([]byte, []quotedRef) {
	var out bytes.Buffer
	var refs []quotedRef
	depth := 0
	for i, line := range strings.SplitAfter(string(src), "\n") {
		added := 0     // quotes added to this line so far
		var quote byte // the quote we are inside of, or 0
		for j := 0; j < len(line); j++ {
			c := line[j]
			switch {
			case quote != 0:
				if c == quote {
					quote = 0
				}
			case c == '"' || c == '\'':
				quote = c
			case c == '#' && (j == 0 || line[j-1] == ' ' || line[j-1] == '\t'):
				out.WriteString(line[j:])
				j = len(line)
				continue
			case c == '{' || c == '[':
				depth++
			case c == '}' || c == ']':
				if depth > 0 {
					depth--
				}
			case c == '$' && depth > 0 && j+1 < len(line) && line[j+1] == '{' && startsScalar(line, j):
				end := refScalarEnd(line, j)
				text := line[j:end]
				if end > j && !strings.ContainsAny(text, `"\`) {
					refs = append(refs, quotedRef{line: i + 1, col: j + 1 + added})
					out.WriteString(`"` + text + `"`)
					added += 2
					j = end - 1
					continue
				}
			}
			out.WriteByte(c)
		}
	}
	return out.Bytes(), refs
}

// startsScalar reports whether position j begins a flow value or entry.
func startsScalar(line string, j int) bool {
	k := j - 1
	for k >= 0 && (line[k] == ' ' || line[k] == '\t') {
		k--
	}
	return k < 0 || strings.IndexByte("{[,:", line[k]) >= 0
}

// refScalarEnd returns where the plain scalar starting with ${ at j ends:
// at a flow indicator or comment outside any ${...}, or at the line's end
// (trailing spaces excluded); j when a ${ is not closed on the line.
func refScalarEnd(line string, j int) int {
	k := j
	for k < len(line) {
		if line[k] == '$' && k+1 < len(line) && line[k+1] == '{' {
			close := strings.IndexByte(line[k:], '}')
			if close < 0 {
				return j
			}
			k += close + 1
			continue
		}
		if strings.IndexByte(",]}\n\r", line[k]) >= 0 || (line[k] == '#' && line[k-1] == ' ') {
			break
		}
		k++
	}
	return j + len(strings.TrimRight(line[j:k], " \t"))
}

// unquoteRefs undoes quoteFlowRefs in the parsed tree: the wrapped scalars
// become plain again (typed by what they expand to, like any plain ${N}),
// and columns after them on their line move back by the two quotes.
func unquoteRefs(n *yaml.Node, refs []quotedRef) {
	if n == nil || len(refs) == 0 {
		return
	}
	shift := 0
	for _, r := range refs {
		if r.line == n.Line && r.col < n.Column {
			shift += 2
		}
	}
	if n.Kind == yaml.ScalarNode && n.Style == yaml.DoubleQuotedStyle {
		for _, r := range refs {
			if r.line == n.Line && r.col == n.Column {
				n.Style = 0
				break
			}
		}
	}
	n.Column -= shift
	for _, c := range n.Content {
		unquoteRefs(c, refs)
	}
}

// Upstream finds the nearest stage of a kind among what st needs, at any
// distance, or nil: a stage reading what an earlier stage of another kind
// decided (the tokenize stage's template) without importing that kind.
func (s *Spec) Upstream(st *Stage, kind string) *Stage {
	byName := map[string]*Stage{}
	for _, x := range s.Stages {
		byName[x.Name] = x
	}
	seen := map[string]bool{}
	queue := append([]string(nil), st.Needs...)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		x := byName[name]
		if x == nil || seen[name] {
			continue
		}
		seen[name] = true
		if x.Uses == kind {
			return x
		}
		queue = append(queue, x.Needs...)
	}
	return nil
}
