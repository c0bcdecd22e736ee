package specs

import (
	"fmt"
	"strings"
)

// Enum is the values a string option may take, declared once beside the
// option: the check, its "did you mean" and the listing of the kind's
// options (`eaglet kinds`) all come from it.
type Enum []EnumValue

// EnumValue is one value of an Enum, with what it means when that is not
// plain from its name ("" otherwise).
type EnumValue struct {
	Name, Doc string
}

// Names lists the values in their declared order.
func (e Enum) Names() []string {
	out := make([]string, len(e))
	for i, v := range e {
		out[i] = v.Name
	}
	return out
}

func (e Enum) has(got string) bool {
	for _, v := range e {
		if got == v.Name {
			return true
		}
	}
	return false
}

// errorAt is the error of a value not among e's, at pos: what owns the
// option ("stage dedupe") and label names it.
func (e Enum) errorAt(pos Pos, what, label, got string) *Error {
	closest := ""
	if len(e) > 1 { // the only value is named anyway
		closest = suggest(got, e.Names())
	}
	return &Error{Pos: pos, Msg: fmt.Sprintf("%s: %s is %q%s; %s", what, label, got, closest, e.use())}
}

// parseEnum reads an `enum` tag: values separated by |, each a name
// optionally followed by what it means in parentheses, as an error names
// them: `enum:"context (source-written tool calls stay as context)|drop"`.
func parseEnum(tag string) (Enum, error) {
	var e Enum
	for _, part := range strings.Split(tag, "|") {
		name, doc, _ := strings.Cut(strings.TrimSpace(part), " ")
		if doc = strings.TrimSpace(doc); doc != "" {
			if !strings.HasPrefix(doc, "(") || !strings.HasSuffix(doc, ")") {
				return nil, fmt.Errorf("value %q: write what it means in parentheses after its name", part)
			}
			doc = doc[1 : len(doc)-1]
		}
		if name == "" || e.has(name) {
			return nil, fmt.Errorf("value %q is empty or named twice", part)
		}
		e = append(e, EnumValue{Name: name, Doc: doc})
	}
	return e, nil
}

// use says which values to use: "the only value is x", "use x or y",
// "use x, y or z", each with its explanation in parentheses.
func (e Enum) use() string {
	parts := make([]string, len(e))
	for i, v := range e {
		parts[i] = v.Name
		if v.Doc != "" {
			parts[i] += " (" + v.Doc + ")"
		}
	}
	switch len(parts) {
	case 0:
		return "no value is allowed"
	case 1:
		return "the only value is " + parts[0]
	}
	return "use " + strings.Join(parts[:len(parts)-1], ", ") + " or " + parts[len(parts)-1]
}

// String lists the values as the docs show them: "a | b | c".
func (e Enum) String() string { return strings.Join(e.Names(), " | ") }

// or lists the values as the reference names an option's type: "a", "a
// or b", "a, b or c".
func (e Enum) or() string {
	names := e.Names()
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
