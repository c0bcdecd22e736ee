package pool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/stages/serving/backend"
)

func TestStatusError_RealBodies(t *testing.T) {
	h := func(kv ...string) http.Header {
		out := http.Header{}
		for i := 0; i < len(kv); i += 2 {
			out.Set(kv[i], kv[i+1])
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		status int
		header http.Header
		body   string
		kind   backend.Kind
		wait   time.Duration
		msg    string
	}{
		{"openrouter rate limit", 429, h("Retry-After", "17"),
			`{"error":{"message":"Provider returned error","code":429,"metadata":{"raw":"temporarily rate-limited upstream","retry_after_seconds":17}}}`,
			backend.Retryable, 17 * time.Second, "Provider returned error"},
		{"openrouter in-flight budget", 402, h("Retry-After", "3"),
			`{"error":{"code":402,"message":"In-flight budget exhausted","metadata":{"limit_source":"openrouter_in_flight_budget","reason":"in_flight_budget_exhausted"}}}`,
			backend.Retryable, 3 * time.Second, "In-flight budget exhausted"},
		{"openrouter credits", 402, nil,
			`{"error":{"code":402,"message":"Insufficient credits. Add more using https://openrouter.ai/credits","metadata":{"limit_source":"openrouter_credits"}}}`,
			backend.Fatal, 0, "Insufficient credits"},
		{"openrouter bad key", 401, nil, `{"error":{"code":401,"message":"No auth credentials found"}}`,
			backend.Fatal, 0, "No auth credentials found"},
		{"openrouter moderation", 403, nil,
			`{"error":{"code":403,"message":"Input was flagged","metadata":{"reasons":["violence"],"flagged_input":"..."}}}`,
			backend.Permanent, 0, "Input was flagged"},
		{"openrouter no provider", 503, nil, `{"error":{"code":503,"message":"No endpoints found that can handle the request"}}`,
			backend.Retryable, 0, "No endpoints found"},
		{"vllm context too long", 400, nil,
			`{"error":{"message":"This model's maximum context length is 4096 tokens. However, you requested 5000 tokens","type":"BadRequestError","param":null,"code":400}}`,
			backend.Permanent, 0, "maximum context length"},
		{"sglang flat error", 400, nil,
			`{"object":"error","message":"The input (9000 tokens) is longer than the model's context length (8192 tokens).","type":"BadRequestError","param":null,"code":400}`,
			backend.Permanent, 0, "longer than the model's context length"},
		{"sglang generate error", 400, nil, `{"error":{"message":"max_new_tokens must be at least 0"}}`,
			backend.Permanent, 0, "max_new_tokens"},
		{"fastapi validation", 422, nil, `{"detail":[{"loc":["body","messages"],"msg":"field required"}]}`,
			backend.Permanent, 0, "field required"},
		{"overloaded with date", 503, h("Retry-After", time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)), `Service Unavailable`,
			backend.Retryable, 59 * time.Minute, "Service Unavailable"},
		{"proxy 502 html", 502, nil, `<html><body>Bad Gateway</body></html>`, backend.Retryable, 0, "Bad Gateway"},
		{"model not found", 404, nil, `{"error":{"message":"The model does not exist","code":404}}`, backend.Fatal, 0, "does not exist"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := StatusError(tc.status, tc.header, []byte(tc.body))
			if e.Kind != tc.kind || e.Status != tc.status || !strings.Contains(e.Msg, tc.msg) {
				t.Fatalf("got kind %v status %d msg %q", e.Kind, e.Status, e.Msg)
			}
			if e.RetryAfter < tc.wait || tc.wait == 0 && e.RetryAfter != 0 {
				t.Fatalf("retry after %v, want %v", e.RetryAfter, tc.wait)
			}
		})
	}
}

func TestEvents(t *testing.T) {
	stream := ": OPENROUTER PROCESSING\n\ndata: {\"a\":1}\n\n: OPENROUTER PROCESSING\n\nevent: x\ndata: {\"b\":\ndata: 2}\n\ndata: [DONE]\n\n"
	var got []string
	if err := Events(strings.NewReader(stream), func(d []byte) error { got = append(got, string(d)); return nil }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, "|") != "{\"a\":1}|{\"b\":\n2}" {
		t.Fatalf("events %q", got)
	}
	err := Events(strings.NewReader("data: {\"a\":1}\n\ndata: {\"a\""), func([]byte) error { return nil })
	if !errors.Is(err, ErrTruncated) {
		t.Fatalf("cut stream: %v", err)
	}
	long := "data: " + strings.Repeat("x", 200<<10) + "\n\ndata: [DONE]\n\n"
	n := 0
	if err := Events(strings.NewReader(long), func(d []byte) error { n = len(d); return nil }); err != nil || n != 200<<10 {
		t.Fatalf("long event: %d bytes, %v", n, err)
	}
}

func TestSplitThink(t *testing.T) {
	for _, tc := range []struct{ in, reasoning, content string }{
		{"<think>\nhmm\n</think>\n\nAnswer.", "hmm", "Answer."},
		{"hmm, the prompt opened it</think>Answer.", "hmm, the prompt opened it", "Answer."},
		{"<think>cut off while thinking", "cut off while thinking", ""},
		{"Just an answer.", "", "Just an answer."},
	} {
		r, c := SplitThink(tc.in, "", "")
		if r != tc.reasoning || c != tc.content {
			t.Errorf("SplitThink(%q) = %q, %q", tc.in, r, c)
		}
	}
}

// TestTrimStop: the one stop id a stopped answer ends on is dropped,
// whether the server named it or the model's files list it; an answer cut
// at max_tokens keeps every id, and ids before the last are never touched.
func TestTrimStop(t *testing.T) {
	const eos, eot = 151643, 151645
	model := []int{eot, eos}
	for _, tc := range []struct {
		name    string
		ids     []int
		finish  string
		matched int
		stop    [][]int
		want    []int
	}{
		{"vLLM: EOS included, none named", []int{5, 6, eot}, "stop", -1, [][]int{model}, []int{5, 6}},
		{"SGLang matched", []int{5, 6, 9}, "stop", 9, nil, []int{5, 6}},
		{"tool call ends on a stop id", []int{5, eos}, "tool_calls", -1, [][]int{nil, model}, []int{5}},
		{"server left it out", []int{5, 6}, "stop", -1, [][]int{model}, []int{5, 6}},
		{"only the last one", []int{5, eot, eot}, "stop", -1, [][]int{model}, []int{5, eot}},
		{"length cut keeps all", []int{5, eot}, "length", -1, [][]int{model}, []int{5, eot}},
		{"stop string matched", []int{5, 6}, "stop", -1, nil, []int{5, 6}},
		{"no ids", nil, "stop", 3, [][]int{model}, nil},
	} {
		if got := TrimStop(tc.ids, tc.finish, tc.matched, tc.stop...); !slices.Equal(got, tc.want) {
			t.Errorf("%s: TrimStop(%v) = %v; want %v", tc.name, tc.ids, got, tc.want)
		}
	}
}

var errRefused = errors.New("dial tcp: connection refused")

func TestPool_TakesOutAndProbesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var logged []string
		logf := func(format string, args ...any) { logged = append(logged, fmt.Sprintf(format, args...)) }
		p, _ := New(Config{URLs: []string{"http://a", "http://b"}, FailAfter: 2, Rest: 20 * time.Millisecond, Log: logf})
		// Balanced by outstanding requests.
		u1, _ := p.Acquire()
		u2, _ := p.Acquire()
		if u1 == u2 {
			t.Fatal("two requests went to the same URL while another was idle")
		}
		p.Release(u2, nil)
		p.Release(u1, errRefused)
		for range 2 {
			u, _ := p.Acquire()
			if u != u1 {
				p.Release(u, nil)
				u, _ = p.Acquire()
			}
			p.Release(u, errRefused)
		}
		if p.Healthy() != 1 {
			t.Fatalf("%d healthy after repeated failures of one URL", p.Healthy())
		}
		for range 5 {
			u, _ := p.Acquire()
			if u == u1 {
				t.Fatal("a URL out of service got traffic before its rest was over")
			}
			p.Release(u, nil)
		}
		time.Sleep(25 * time.Millisecond)
		probe, _ := p.Acquire()
		if probe != u1 {
			t.Fatal("rested URL was not probed")
		}
		other, _ := p.Acquire()
		if other == u1 {
			t.Fatal("a second request went to a URL being probed")
		}
		p.Release(other, nil)
		p.Release(probe, nil)
		if p.Healthy() != 2 {
			t.Fatal("a successful probe did not bring the URL back")
		}
		// The log says which URL went out, why, and that it came back.
		want := []string{"http://a out of service for 20ms after 2 failures in a row: dial tcp: connection refused", "http://a is back in service"}
		if strings.Join(logged, "\n") != strings.Join(want, "\n") {
			t.Errorf("logged %q; want %q", logged, want)
		}
	})
}

func TestPool_AllDown(t *testing.T) {
	tests := []struct {
		urls []string
		msg  string
	}{
		{[]string{"http://a"}, "the endpoint's only URL http://a is out of service after repeated failures: dial tcp: connection refused"},
		{[]string{"http://a", "http://b"}, "all 2 URLs are out of service after repeated failures (last: dial tcp: connection refused)"},
	}
	for _, tt := range tests {
		p, _ := New(Config{URLs: tt.urls, FailAfter: 1, Rest: time.Minute})
		for range tt.urls {
			u, _ := p.Acquire()
			p.Release(u, errRefused)
		}
		_, err := p.Acquire()
		kind, wait := backend.Classify(err)
		if kind != backend.Retryable || wait < 59*time.Second {
			t.Fatalf("%d URLs all down: %v (%v, %v)", len(tt.urls), err, kind, wait)
		}
		if !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%d URLs all down: %q; want %q", len(tt.urls), err, tt.msg)
		}
	}
}

// A 404 is most often a base URL without /v1: the error names the URL.
func TestPost_NotFoundNamesTheURL(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	defer hs.Close()
	p, _ := New(Config{URLs: []string{hs.URL}})
	err := p.Post(context.Background(), "/chat/completions", []byte(`{}`), Auth{}, func(io.Reader) error { return nil })
	if kind, _ := backend.Classify(err); kind != backend.Fatal || !strings.Contains(err.Error(), "POST "+hs.URL+"/chat/completions") || !strings.Contains(err.Error(), "/v1") {
		t.Errorf("404: %v (%v); want a fatal error naming the URL and /v1", err, kind)
	}
}

// A base URL with a query string keeps it after the API path.
func TestPost_KeepsQueryString(t *testing.T) {
	var got string
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = r.URL.Path + "?" + r.URL.RawQuery
	}))
	defer hs.Close()
	tests := []struct{ base, want string }{
		{hs.URL + "/v1?api-version=2024-06-01", "/v1/chat/completions?api-version=2024-06-01"},
		{hs.URL + "/v1/?a=1&b=x%2Fy", "/v1/chat/completions?a=1&b=x%2Fy"},
		{hs.URL + "/v1", "/v1/chat/completions?"},
	}
	for _, tt := range tests {
		p, _ := New(Config{URLs: []string{tt.base}})
		// The URL made for a path is kept for the next request: one to
		// another path in between must not get it, nor lose it.
		for _, path := range []string{"/chat/completions", "/models", "/chat/completions"} {
			if err := p.Post(context.Background(), path, []byte(`{}`), Auth{}, func(io.Reader) error { return nil }); err != nil {
				t.Fatal(err)
			}
			if want := strings.Replace(tt.want, "/chat/completions", path, 1); got != want {
				t.Errorf("base %s, %s: server saw %s; want %s", tt.base, path, got, want)
			}
		}
	}
}
