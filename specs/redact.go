package specs

import (
	"errors"
	"io"
	"strings"
	"sync"

	"github.com/hashicorp/go-multierror"
)

// Redact replaces every secret that came from the environment with "***".
// A secret shorter than shortSecret characters (the "x" or "EMPTY" a local
// server takes) is replaced only where it stands as a word of its own, so
// that a key "x" does not turn every "max_tokens" in the log into
// "ma***_tokens"; a longer one is replaced wherever it appears.
func (s *Spec) Redact(text string) string {
	for _, v := range s.secrets {
		if len(v) >= shortSecret {
			text = strings.ReplaceAll(text, v, "***")
		} else {
			text = replaceWord(text, v, "***")
		}
	}
	return text
}

// shortSecret is the length from which a secret is scrubbed even inside a
// longer word: real API keys run to dozens of characters.
const shortSecret = 8

// replaceWord replaces the occurrences of old in text that no letter, digit
// or underscore touches on either side.
func replaceWord(text, old, repl string) string {
	if !strings.Contains(text, old) {
		return text
	}
	var b strings.Builder
	i := 0
	for {
		j := strings.Index(text[i:], old)
		if j < 0 {
			b.WriteString(text[i:])
			return b.String()
		}
		start, end := i+j, i+j+len(old)
		b.WriteString(text[i:start])
		if wordByteBefore(text, start) || wordByteAt(text, end) {
			b.WriteString(old)
		} else {
			b.WriteString(repl)
		}
		i = end
	}
}

func wordByteBefore(text string, i int) bool { return i > 0 && isWordByte(text[i-1]) }

func wordByteAt(text string, i int) bool { return i < len(text) && isWordByte(text[i]) }

func isWordByte(c byte) bool {
	return c == '_' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

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
