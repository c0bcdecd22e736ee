package chat

import (
	"strings"

	"github.com/ardanlabs/jinja"
)

// The Jinja engine implements trim, upper, lower, title and capitalize
// with Go's rules (strings.TrimSpace keeps U+001C..U+001F, ToUpper keeps
// "ß"), and looks its own filters up before the template's variables, so
// they cannot be replaced by name. The source is compiled with those
// filters, and the case methods, renamed to callables of ours that follow
// Python; strip, lstrip, rstrip and split() the engine already does as
// Python does.
var (
	pyFilterNames = map[string]string{
		"trim": "_py_trim", "upper": "_py_upper", "lower": "_py_lower",
		"title": "_py_jinja_title", "capitalize": "_py_capitalize",
	}
	// A method without arguments, s.upper(), becomes s|_py_upper: the
	// same postfix step for the engine's parser, except as the bare
	// argument of a test (x is sameas s.lower()), which no chat template
	// writes.
	pyMethodNames = map[string]string{
		"upper": "_py_upper", "lower": "_py_lower", "title": "_py_title",
		"capitalize": "_py_capitalize", "isspace": "_py_isspace",
	}
)

// pyCallables are the renamed filters, as template variables.
var pyCallables = map[string]jinja.Value{
	"_py_trim": jinja.NewCallable("trim", func(args []jinja.Value, kw map[string]jinja.Value) (jinja.Value, error) {
		var chars *string
		if c, ok := kw["chars"]; ok && !c.IsNone() {
			s := pyStr(c)
			chars = &s
		} else if len(args) > 1 && !args[1].IsNone() {
			s := pyStr(args[1])
			chars = &s
		}
		return jinja.NewString(pyStrip(pyStr(arg0(args)), chars, true, true)), nil
	}),
	"_py_upper":       strFunc("upper", pyUpper),
	"_py_lower":       strFunc("lower", pyLower),
	"_py_title":       strFunc("title", pyTitle),
	"_py_jinja_title": strFunc("title", jinjaTitle),
	"_py_capitalize":  strFunc("capitalize", pyCapitalize),
	"_py_isspace": jinja.NewCallable("isspace", func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		return jinja.NewBool(pyIsSpace(pyStr(arg0(args)))), nil
	}),
}

func strFunc(name string, fn func(string) string) jinja.Value {
	return jinja.NewCallable(name, func(args []jinja.Value, _ map[string]jinja.Value) (jinja.Value, error) {
		return jinja.NewString(fn(pyStr(arg0(args)))), nil
	})
}

func arg0(args []jinja.Value) jinja.Value {
	if len(args) == 0 {
		return jinja.Undefined()
	}
	return args[0]
}

// pyStr is Jinja2's soft_str: a string as it is, undefined as "", anything
// else as Python prints it.
func pyStr(v jinja.Value) string {
	switch {
	case v.IsString():
		return v.AsString()
	case v.IsUndefined():
		return ""
	}
	return v.String()
}

// pyFilterSource renames, inside the template's tags, the filters and
// methods pyFilterNames and pyMethodNames list. It splits tags as the
// engine's scanner does (quotes hide closers, raw blocks and comments are
// left alone), so text and string literals keep their bytes.
func pyFilterSource(src string) string {
	var out strings.Builder
	i := 0
	for i < len(src) {
		open := strings.Index(src[i:], "{")
		if open < 0 || i+open+1 >= len(src) {
			break
		}
		at := i + open
		closer := map[byte]string{'{': "}}", '%': "%}", '#': "#}"}[src[at+1]]
		if closer == "" {
			out.WriteString(src[i : at+1])
			i = at + 1
			continue
		}
		end := tagEnd(src, at+2, closer)
		if end < 0 {
			break // unclosed: the engine reports it
		}
		out.WriteString(src[i : at+2])
		body := src[at+2 : end]
		if closer == "#}" {
			out.WriteString(body)
			i = end
			continue
		}
		out.WriteString(renameInTag(body, closer == "%}"))
		i = end
		if closer == "%}" && tagWord(body) == "raw" {
			// As the engine reads a raw block: up to the first {% endraw %},
			// whatever quotes and tags come before it.
			j := rawEnd(src, i)
			out.WriteString(src[i:j])
			i = j
		}
	}
	out.WriteString(src[i:])
	return out.String()
}

// tagWord is a statement's content without its whitespace-control marks.
func tagWord(body string) string {
	return strings.TrimSpace(strings.Trim(strings.TrimSpace(body), "-+"))
}

// rawEnd returns where the {% endraw %} closing a raw block begun before
// from starts, or the end of src.
func rawEnd(src string, from int) int {
	for i := from; ; {
		k := strings.Index(src[i:], "{%")
		if k < 0 {
			return len(src)
		}
		at := i + k
		if e := strings.Index(src[at+2:], "%}"); e >= 0 && tagWord(src[at+2:at+2+e]) == "endraw" {
			return at
		}
		i = at + 2
	}
}

// tagEnd returns the offset of closer ending the tag whose content starts
// at from, skipping quoted strings and brackets as the engine does, or -1.
func tagEnd(src string, from int, closer string) int {
	depth := 0
	for i := from; i < len(src); i++ {
		c := src[i]
		switch {
		case closer != "#}" && (c == '\'' || c == '"'):
			i = quoteEnd(src, i)
		case depth == 0 && strings.HasPrefix(src[i:], closer):
			return i
		case closer != "#}" && strings.IndexByte("([{", c) >= 0:
			depth++
		case closer != "#}" && strings.IndexByte(")]}", c) >= 0:
			depth--
		}
	}
	return -1
}

// quoteEnd returns the offset of the quote closing the string that opens
// at i (the last byte when it never closes).
func quoteEnd(s string, i int) int {
	q := s[i]
	for i++; i < len(s) && s[i] != q; i++ {
		if s[i] == '\\' {
			i++
		}
	}
	return min(i, len(s)-1)
}

// renameInTag renames filters and methods in one tag's content; in a
// statement, the filter of a filter block ({% filter upper %}) too.
func renameInTag(body string, stmt bool) string {
	var b strings.Builder
	i := 0
	if stmt {
		k := len(body) - len(strings.TrimLeft(body, "-+ \t\r\n"))
		if strings.HasPrefix(body[k:], "filter") && k+6 < len(body) && strings.IndexByte(" \t\r\n", body[k+6]) >= 0 {
			b.WriteString(body[:k+6])
			i = k + 6
			i = renameName(&b, body, i, pyFilterNames)
		}
	}
	for i < len(body) {
		c := body[i]
		switch {
		case c == '\'' || c == '"':
			j := quoteEnd(body, i) + 1
			b.WriteString(body[i:j])
			i = j
		case c == '|':
			b.WriteByte(c)
			i = renameName(&b, body, i+1, pyFilterNames)
		case c == '.':
			j := i + 1
			for j < len(body) && isIdent(body[j]) {
				j++
			}
			name := body[i+1 : j]
			k := skipSpace(body, j)
			if to, ok := pyMethodNames[name]; ok && k < len(body) && body[k] == '(' {
				if m := skipSpace(body, k+1); m < len(body) && body[m] == ')' {
					b.WriteString("|" + to)
					i = m + 1
					continue
				}
			}
			b.WriteString(body[i:j])
			i = j
		case isIdent(c):
			// A whole name or number, so the dot of 1.5 is not taken for
			// an attribute's.
			j := i
			for j < len(body) && (isIdent(body[j]) || isDigit(c) && body[j] == '.') {
				j++
			}
			b.WriteString(body[i:j])
			i = j
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String()
}

// renameName copies the spaces and the name at body[i:], renamed when
// names has it, and returns where it ends.
func renameName(b *strings.Builder, body string, i int, names map[string]string) int {
	k := skipSpace(body, i)
	j := k
	for j < len(body) && isIdent(body[j]) {
		j++
	}
	b.WriteString(body[i:k])
	if to, ok := names[body[k:j]]; ok {
		b.WriteString(to)
	} else {
		b.WriteString(body[k:j])
	}
	return j
}

func skipSpace(s string, i int) int {
	for i < len(s) && strings.IndexByte(" \t\r\n", s[i]) >= 0 {
		i++
	}
	return i
}

func isIdent(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || isDigit(c)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
