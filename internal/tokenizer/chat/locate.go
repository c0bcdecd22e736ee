package chat

import (
	"fmt"
	"regexp"
	"strings"
)

// TemplateError is a chat template that failed to compile or render, with
// the template line the failure most likely comes from. The Jinja engine
// reports no positions, so the line is found by searching the source for
// what the message names (an expression, a block keyword, a raised
// message); Line is 0 when nothing matched.
type TemplateError struct {
	Line int
	Text string // the source line, trimmed
	Err  error
}

func (e *TemplateError) Error() string {
	if e.Line == 0 {
		return fmt.Sprintf("chat template: %v", e.Err)
	}
	return fmt.Sprintf("chat template line %d: %v\n    %s", e.Line, e.Err, e.Text)
}

func (e *TemplateError) Unwrap() error { return e.Err }

var (
	unclosedBlock = regexp.MustCompile(`unclosed (\w+) block`)
	namedValue    = regexp.MustCompile(`^([\w.\[\]'"]+) is `)
)

// templateError wraps err with the line of src it most likely points at.
func templateError(src string, err error) error {
	msg := err.Error()
	var needle string
	last := false
	switch {
	case unclosedBlock.MatchString(msg):
		needle, last = unclosedBlock.FindStringSubmatch(msg)[1], true
	case namedValue.MatchString(msg):
		needle = namedValue.FindStringSubmatch(msg)[1]
	default:
		needle = strings.TrimPrefix(msg, "jinja parse: ")
	}
	lines := strings.Split(src, "\n")
	find := func(needle string) int {
		found := 0
		for i, l := range lines {
			if needle == "" || !strings.Contains(l, needle) {
				continue
			}
			if last && !regexp.MustCompile(`\{%-?\s*`+regexp.QuoteMeta(needle)+`\b`).MatchString(l) {
				continue
			}
			found = i + 1
			if !last {
				break
			}
		}
		return found
	}
	found := find(needle)
	if k := strings.LastIndexByte(needle, '.'); found == 0 && k >= 0 {
		// The engine names values by their resolved path (messages[item]);
		// the attribute at the end is spelled as in the source.
		found = find(needle[k:])
	}
	te := &TemplateError{Err: err, Line: found}
	if found > 0 {
		te.Text = strings.TrimSpace(lines[found-1])
	}
	return te
}
