package openai_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/registry"
)

func parse(t *testing.T, endpoint string) (*specs.Spec, error) {
	t.Helper()
	return specs.Parse("spec.yaml", []byte("version: 1\nname: r\nendpoints:\n  e: "+endpoint+"\n"), func(string) (string, bool) { return "", false })
}

// TestRouting_SentAndPartOfIdentity: provider routing goes to OpenRouter
// as the request's "provider" object, decides the answers' identity (a
// pinned provider is another serving stack), and moving the same routing
// from extra.provider to provider keeps the answers already had.
func TestRouting_SentAndPartOfIdentity(t *testing.T) {
	var body []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ = io.ReadAll(r.Body)
		io.WriteString(w, `{"provider":"DeepInfra","choices":[{"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1}}`)
	}))
	defer srv.Close()
	build := func(options string) *registry.Client {
		t.Helper()
		// A spec of endpoints alone is refused for having no stages, and
		// parsed whole all the same.
		spec, err := parse(t, `{api: openai, urls: [`+srv.URL+`], model: m, options: `+options+`}`)
		if spec == nil || !strings.Contains(err.Error(), "no stages") || strings.Contains(err.Error(), "problems") {
			t.Fatalf("%s: %v", options, err)
		}
		p, err := pool.New(pool.Config{URLs: []string{srv.URL}})
		if err != nil {
			t.Fatal(err)
		}
		c, err := registry.New(spec, spec.Endpoint("e"), pool.Server{URLs: []string{srv.URL}, Model: "m", Pool: p})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	typed := build(`{provider: {order: [deepinfra, together], allow_fallbacks: false, quantizations: [fp8]}}`)
	if _, err := typed.Generate(context.Background(), &backend.Request{Messages: []conv.Message{{Role: conv.User, Content: "hi"}}, MaxTokens: 4}); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Provider json.RawMessage `json:"provider"`
	}
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if want := `{"allow_fallbacks":false,"order":["deepinfra","together"],"quantizations":["fp8"]}`; string(got.Provider) != want {
		t.Errorf("provider sent %s; want %s", got.Provider, want)
	}
	untyped := build(`{extra: {provider: {order: [deepinfra, together], allow_fallbacks: false, quantizations: [fp8]}}}`)
	if typed.Identity != untyped.Identity {
		t.Errorf("the same routing in provider and in extra.provider: identities\n%s\n%s", typed.Identity, untyped.Identity)
	}
	for _, other := range []string{`{}`, `{provider: {order: [together]}}`, `{provider: {order: [deepinfra, together], quantizations: [fp8]}}`} {
		if c := build(other); c.Identity == typed.Identity {
			t.Errorf("options %s have the identity of another routing: %s", other, c.Identity)
		}
	}
}

// TestRouting_Refused: routing given twice, a quantisation level OpenRouter
// does not know and an unknown sort are refused at their lines.
func TestRouting_Refused(t *testing.T) {
	for _, tc := range []struct{ name, options, want string }{
		{"twice", "{provider: {order: [a]}, extra: {provider: {order: [b]}}}", "spec.yaml:4:103: endpoint e: provider routing is given twice"},
		{"quantization", "{provider: {quantizations: [fp8, nvfp4]}}", `spec.yaml:4:87: endpoint e: provider quantizations has "nvfp4"; OpenRouter's levels are int4, int8, fp4`},
		{"sort", "{provider: {sort: fastest}}", `sort is "fastest"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse(t, `{api: openai, urls: [http://h/v1], model: m, options: `+tc.options+`}`)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want %q", err, tc.want)
			}
		})
	}
}
