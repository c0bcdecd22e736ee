package specs_test

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/specs"
)

func TestSpec_Redact(t *testing.T) {
	src := "version: 1\nname: r\nstate: \"${STATE_DIR}/${DATA_TOKEN}.db\"\nbad: x\n"
	env := map[string]string{"DATA_TOKEN": "hunter2secret", "STATE_DIR": "plain"}
	spec, err := specs.Parse("spec.yaml", []byte(src), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if spec == nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	fmt.Fprintf(spec.NewRedactWriter(&buf), "state %s", spec.State)
	tests := []struct {
		name, got, want string
	}{
		{"text", spec.Redact("open plain/hunter2secret.db"), "open plain/***.db"},
		{"writer", buf.String(), "state plain/***.db"},
		{"plain error", spec.RedactError(errors.New("key hunter2secret")).Error(), "key ***"},
		// The spec's own errors keep their position and snippet.
		{"spec errors", spec.RedactError(spec.Errorf(specs.Pos{File: "spec.yaml", Line: 3, Col: 8}, "state %s", spec.State)).Error(),
			"spec.yaml:3:8: state plain/***.db\n    | state: \"${STATE_DIR}/${DATA_TOKEN}.db\"\n    |        ^"},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
	// The unknown key and the missing stages.
	if msg := spec.RedactError(err).Error(); !strings.Contains(msg, `unknown key "bad"`) || !strings.HasSuffix(msg, "\n2 problems") {
		t.Errorf("a multierror keeps its problems and format: %q", msg)
	}
}

// TestSpec_RedactShortSecret: a short key (the "x" or "EMPTY" local servers
// take) is scrubbed where it stands alone, as in a header or a JSON value,
// not inside the words of every log line; a long one is scrubbed anywhere.
func TestSpec_RedactShortSecret(t *testing.T) {
	src := "version: 1\nname: r\nstate: s.db\nendpoints:\n  a: {api: openai, urls: [\"http://h/v1\"], api_key: \"${SHORT_KEY}\"}\n  b: {api: openai, urls: [\"http://h/v1\"], api_key: \"${LONG_KEY}\"}\n"
	env := map[string]string{"SHORT_KEY": "x", "LONG_KEY": "sk-0123456789"}
	spec, _ := specs.Parse("spec.yaml", []byte(src), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if spec == nil {
		t.Fatal("spec did not parse")
	}
	tests := []struct{ in, want string }{
		{"dropped: over max_samples", "dropped: over max_samples"},
		{"Authorization: Bearer x", "Authorization: Bearer ***"},
		{`{"api_key":"x"}`, `{"api_key":"***"}`},
		{"x", "***"},
		{"3 x 4 and x-ray", "3 *** 4 and ***-ray"},
		{"key sk-0123456789 and asksk-0123456789z", "key *** and ask***z"},
	}
	for _, tt := range tests {
		if got := spec.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestSpec_SecretsByPlace: a secret is known by its variable's name, by its
// value's shape, or by where the spec writes it (api_key, a credential
// header), and ConcealJSON stores each as its reference.
func TestSpec_SecretsByPlace(t *testing.T) {
	src := `version: 1
name: r
state: s.db
endpoints:
  a:
    api: openai
    urls: ["http://h/v1"]
    api_key: literalkey123
    headers: {Authorization: "Bearer bearer123", X-Title: eaglet, X-Model: "${MODEL_ARG}", X-Plain: "${PLAIN}"}
  local: {api: openai, urls: ["http://h/v1"], api_key: x}
`
	env := map[string]string{"MODEL_ARG": "hf_byvalue123", "PLAIN": "plainvalue123"}
	spec, _ := specs.Parse("spec.yaml", []byte(src), func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if spec == nil {
		t.Fatal("spec did not parse")
	}
	tests := []struct{ name, got, want string }{
		{"api_key", spec.Redact("key literalkey123"), "key ***"},
		{"credential header", spec.Redact("Authorization: Bearer bearer123"), "Authorization: ***"},
		{"a value shaped like a token", spec.Redact("arg hf_byvalue123"), "arg ***"},
		{"a plain header and variable", spec.Redact("eaglet plainvalue123"), "eaglet plainvalue123"},
		{"a placeholder key written as it is", spec.Redact(`<rect x="12">`), `<rect x="12">`},
		{"concealed as references", spec.ConcealJSON(`{"a":"hf_byvalue123 literalkey123","x":"{\"k\":\"hf_byvalue123\"}"}`),
			`{"a":"${MODEL_ARG} (api_key of endpoint a)","x":"{\"k\":\"${MODEL_ARG}\"}"}`},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %q, want %q", tt.name, tt.got, tt.want)
		}
	}
}
