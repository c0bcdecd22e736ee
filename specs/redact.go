package specs

import (
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/hashicorp/go-multierror"
)

// Redact replaces every secret that came from the environment with "***".
func (s *Spec) Redact(text string) string {
	for _, v := range s.secrets {
		text = strings.ReplaceAll(text, v, "***")
	}
	return text
}

// Secrets returns the secret values to scrub from output.
func (s *Spec) Secrets() []string { return s.secrets }

// RedactError returns err with secrets scrubbed from its messages. The
// problems of a multierror stay separate and a spec *Error keeps its
// position and snippet: the snippet is the line as written, with ${VAR}
// rather than its value, so its caret still points where it should.
func (s *Spec) RedactError(err error) error {
	if err == nil || len(s.secrets) == 0 {
		return err
	}
	var me *multierror.Error
	if errors.As(err, &me) {
		out := &multierror.Error{ErrorFormat: me.ErrorFormat}
		for _, e := range me.Errors {
			out.Errors = append(out.Errors, s.RedactError(e))
		}
		return out
	}
	if se, ok := err.(*Error); ok {
		c := *se
		c.Msg = s.Redact(c.Msg)
		return &c
	}
	if msg := s.Redact(err.Error()); msg != err.Error() {
		return errors.New(msg)
	}
	return err
}

// RedactWriter scrubs secrets from everything written through it. Each
// Write is redacted whole, so a secret must not be split across writes; a
// line or a formatted message never is. It is safe for concurrent use.
type RedactWriter struct {
	// W receives the redacted text.
	W    io.Writer
	spec *Spec
	mu   sync.Mutex
}

// NewRedactWriter returns a writer that scrubs the spec's secrets before
// writing to w.
func (s *Spec) NewRedactWriter(w io.Writer) *RedactWriter {
	return &RedactWriter{W: w, spec: s}
}

func (w *RedactWriter) Write(b []byte) (int, error) {
	if w.W == nil {
		return len(b), nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := io.WriteString(w.W, w.spec.Redact(string(b))); err != nil {
		return 0, err
	}
	return len(b), nil
}
