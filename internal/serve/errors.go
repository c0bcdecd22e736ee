package serve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/hashicorp/go-multierror"
)

// Sentinels a StartError wraps, for callers that branch on why a replica
// did not start.
var (
	// ErrExited is a local server that exited before it answered.
	ErrExited = errors.New("exited before it was ready")
	// ErrNotReady is a replica that did not answer within ready_timeout.
	ErrNotReady = errors.New("not ready")
	// ErrStopped is a restart of a group that was stopped before the new
	// server answered.
	ErrStopped = errors.New("the servers were stopped")
)

// tailLines is how many of a log's last lines an error shows: enough for
// a Python traceback's cause (CUDA out of memory, a missing model file).
const tailLines = 20

// StartError is a replica that failed to start, with the last lines of
// its log, which say why far better than the exit status does.
type StartError struct {
	// Name is the endpoint's, Replica the replica's index.
	Name    string
	Replica int
	// Log is the file the lines come from.
	Log  string
	Tail []string
	Err  error
}

func (e *StartError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s replica %d: %v", e.Name, e.Replica, e.Err)
	if e.Log == "" {
		return b.String()
	}
	if len(e.Tail) == 0 {
		fmt.Fprintf(&b, " (log %s is empty)", e.Log)
		return b.String()
	}
	fmt.Fprintf(&b, "; last lines of %s:", e.Log)
	for _, l := range e.Tail {
		b.WriteString("\n    " + l)
	}
	return b.String()
}

func (e *StartError) Unwrap() error { return e.Err }

// tail returns the last n lines of a log, read from its last 64 KiB.
// Progress bars redraw a line with \r, so each redraw counts as a line of
// its own, and a line longer than a screen is cut.
func tail(path string, n int) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	const window = 64 << 10
	cut := false
	if fi, err := f.Stat(); err == nil && fi.Size() > window {
		_, err = f.Seek(-window, io.SeekEnd)
		cut = err == nil
	}
	b, _ := io.ReadAll(f)
	if i := bytes.IndexAny(b, "\r\n"); cut && i >= 0 {
		b = b[i+1:] // the window's first line is a fragment
	}
	var lines []string
	for _, l := range bytes.FieldsFunc(b, func(r rune) bool { return r == '\n' || r == '\r' }) {
		if l = bytes.TrimRight(l, " \t"); len(l) == 0 {
			continue
		}
		if len(l) > 300 {
			l = append(l[:300:300], "..."...)
		}
		lines = append(lines, string(l))
	}
	return lines[max(0, len(lines)-n):]
}

// listed renders several errors one to a line, after how many of what
// ("replicas failed", "problems") there are.
func listed(what string) multierror.ErrorFormatFunc {
	return func(errs []error) string {
		if len(errs) == 1 {
			return errs[0].Error()
		}
		lines := make([]string, len(errs))
		for i, e := range errs {
			lines[i] = e.Error()
		}
		return fmt.Sprintf("%d %s:\n  %s", len(errs), what, strings.Join(lines, "\n  "))
	}
}
