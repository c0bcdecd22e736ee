package specs

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-multierror"
	"gopkg.in/yaml.v3"
)

// Pos is a position in a spec file; Line and Col are 1-based.
type Pos struct {
	File string
	Line int
	Col  int
}

func (p Pos) String() string {
	if p.Line == 0 {
		return p.File
	}
	return fmt.Sprintf("%s:%d:%d", p.File, p.Line, p.Col)
}

// Error is one problem in a spec, at a position, with the offending line.
type Error struct {
	Pos Pos
	Msg string
	// Snippet is the source line the error points into, if known.
	Snippet string
	// Cause marks a problem that others follow from: a missing
	// environment variable, which every check of a value built from it
	// then fails on. Causes are listed first.
	Cause bool
}

func (e *Error) Error() string {
	if e.Snippet == "" || e.Pos.Col == 0 {
		return fmt.Sprintf("%s: %s", e.Pos, e.Msg)
	}
	caret := strings.Repeat(" ", e.Pos.Col-1) + "^"
	return fmt.Sprintf("%s: %s\n    | %s\n    | %s", e.Pos, e.Msg, e.Snippet, caret)
}

// errorList collects every problem of a spec so they are reported at once.
type errorList struct {
	file  string
	lines []string
	err   *multierror.Error
}

func newErrorList(file string, src []byte) *errorList {
	return &errorList{file: file, lines: strings.Split(string(src), "\n")}
}

func (l *errorList) at(line, col int, format string, args ...any) {
	l.err = multierror.Append(l.err, l.errorAt(line, col, format, args...))
}

// cause is at for a problem others follow from (Error.Cause).
func (l *errorList) cause(line, col int, format string, args ...any) {
	e := l.errorAt(line, col, format, args...)
	e.Cause = true
	l.err = multierror.Append(l.err, e)
}

func (l *errorList) errorAt(line, col int, format string, args ...any) *Error {
	if n := len(l.lines); line > n && n > 0 {
		// YAML places what a file lacks ("---" and nothing more) on the
		// line after its last: point at the end of the file instead.
		line, col = n, len(l.lines[n-1])+1
	}
	e := &Error{Pos: Pos{File: l.file, Line: line, Col: col}, Msg: fmt.Sprintf(format, args...)}
	if line >= 1 && line <= len(l.lines) {
		e.Snippet = strings.ReplaceAll(l.lines[line-1], "\t", " ")
	}
	return e
}

// add keeps err, with the line it points into when it names none.
func (l *errorList) add(err error) {
	if e, ok := err.(*Error); ok && e.Snippet == "" && e.Pos.Line >= 1 && e.Pos.Line <= len(l.lines) {
		e.Snippet = strings.ReplaceAll(l.lines[e.Pos.Line-1], "\t", " ")
	}
	l.err = multierror.Append(l.err, err)
}

func (l *errorList) node(n *yaml.Node, format string, args ...any) {
	if n == nil {
		l.at(0, 0, format, args...)
		return
	}
	l.at(n.Line, n.Column, format, args...)
}

// result returns nil or a *multierror.Error whose message lists every problem.
func (l *errorList) result() error {
	if l.err == nil {
		return nil
	}
	l.err.ErrorFormat = FormatErrors
	return l.err
}

// FormatErrors renders several spec errors one after another, as a compiler does.
func FormatErrors(errs []error) string {
	var b strings.Builder
	// Two checks can find the same problem (an endpoint's options are
	// checked with the spec and again by the stage that uses it): it is
	// one problem, printed once.
	seen := map[string]bool{}
	for _, e := range errs {
		msg := e.Error()
		if seen[msg] {
			continue
		}
		if len(seen) > 0 {
			b.WriteString("\n")
		}
		seen[msg] = true
		b.WriteString(msg)
	}
	if len(seen) > 1 {
		fmt.Fprintf(&b, "\n%d problems", len(seen))
	}
	return b.String()
}

// Suggest returns ` (did you mean "x"?)` for the candidate closest to got,
// or "" when none is close.
func Suggest(got string, candidates []string) string { return suggest(got, candidates) }

func suggest(got string, candidates []string) string {
	best, bestD := "", 1<<30
	for _, c := range candidates {
		if d := levenshtein(strings.ToLower(got), strings.ToLower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if best != "" && bestD <= max(2, len(got)/3) {
		return fmt.Sprintf(" (did you mean %q?)", best)
	}
	return ""
}

func levenshtein(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	prev := make([]int, len(rb)+1)
	cur := make([]int, len(rb)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(ra); i++ {
		cur[0] = i
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(rb)]
}
