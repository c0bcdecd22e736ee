package specs

import (
	"encoding/json"
	"errors"
	"io"
	"sort"
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
	for _, sec := range s.secrets {
		if len(sec.value) >= shortSecret {
			text = strings.ReplaceAll(text, sec.value, "***")
		} else {
			text = replaceWord(text, sec.value, "***")
		}
	}
	return text
}

// secret is a value eaglet never prints or stores, and ref what stands for
// it in what is stored: the ${VAR} it came from, or where the spec wrote it.
type secret struct {
	value, ref string
}

// collectSecrets lists the secrets interpolation found (value to reference)
// and those known by where they stand: every endpoint's api_key, and the
// headers whose names say they carry credentials (Authorization,
// X-Api-Key, Cookie), even when written into the spec as they are. A value
// written there shorter than shortSecret is the "x" or "EMPTY" a local
// server takes, not a secret: scrubbed, it would turn every x="12" of the
// report's drawings into ***="12".
func collectSecrets(fromEnv map[string]string, endpoints []*Endpoint) []secret {
	all := map[string]string{}
	for v, ref := range fromEnv {
		all[v] = ref
	}
	add := func(v, ref string) {
		if _, ok := all[v]; !ok && len(v) >= shortSecret {
			all[v] = ref
		}
	}
	for _, ep := range endpoints {
		add(ep.APIKey, "(api_key of endpoint "+ep.Name+")")
		for k, v := range ep.Headers {
			if looksSecret(k) {
				add(v, "(header "+k+" of endpoint "+ep.Name+")")
			}
		}
	}
	out := make([]secret, 0, len(all))
	for v, ref := range all {
		out = append(out, secret{v, ref})
	}
	sort.Slice(out, func(i, j int) bool {
		if len(out[i].value) != len(out[j].value) {
			return len(out[i].value) > len(out[j].value)
		}
		return out[i].value < out[j].value
	})
	return out
}

// ConcealJSON replaces every secret in a JSON document with its reference
// (${HF_TOKEN}), in strings and in strings of JSON held by strings (a
// kind's own fingerprint), so that what is hashed and stored of a
// configuration names a secret without holding it: a rotated token
// changes nothing, another variable does. A value shorter than
// shortSecret is left as it is: such a "key" guards nothing, and as a
// word it may stand for itself anywhere in a configuration.
func (s *Spec) ConcealJSON(doc string) string {
	for _, sec := range s.secrets {
		if len(sec.value) < shortSecret {
			continue
		}
		v, ref := sec.value, sec.ref
		for range 2 {
			v, ref = jsonInner(v), jsonInner(ref)
			doc = strings.ReplaceAll(doc, v, ref)
		}
	}
	return doc
}

// jsonInner is s encoded as a JSON string, without its quotes.
func jsonInner(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
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
