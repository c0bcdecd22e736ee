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

// Values makes an Enum of names that need no explanation.
func Values(names ...string) Enum {
	e := make(Enum, len(names))
	for i, n := range names {
		e[i] = EnumValue{Name: n}
	}
	return e
}

// Names lists the values in their declared order.
func (e Enum) Names() []string {
	out := make([]string, len(e))
	for i, v := range e {
		out[i] = v.Name
	}
	return out
}

// Check returns nil when got is one of e or empty (the option is not set
// and its default applies); otherwise an *Error at the option's value in
// st naming the closest value and every value. The message calls the
// option label; it is found at path (as in Stage.OptionPos), or at label
// itself when no path is given.
func (e Enum) Check(st *Stage, label, got string, path ...string) error {
	if len(path) == 0 {
		path = []string{label}
	}
	for _, v := range e {
		if got == "" || got == v.Name {
			return nil
		}
	}
	closest := ""
	if len(e) > 1 { // the only value is named anyway
		closest = suggest(got, e.Names())
	}
	return &Error{Pos: st.OptionPos(path...), Msg: fmt.Sprintf("stage %s: %s is %q%s; %s",
		st.Name, label, got, closest, e.use())}
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
