package pool

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"strings"

	"github.com/eaglet-dev/eaglet/stages/serving/backend"
)

// Auth is what every request of an endpoint carries.
type Auth struct {
	// APIKey is sent as a bearer token; it is scrubbed from every error.
	APIKey  string
	Headers map[string]string
}

// Post sends a JSON body to path on the least busy URL and hands a 2xx
// response to read. Every failure comes back classified: an HTTP status by
// StatusError, a connection error or a body read fails with a plain error
// as Retryable, an error read returns as is (a *backend.Error it built),
// a request the watch moved off a hung URL as Moved, and the context's own
// error untouched. Connection errors, 5xx and unreadable bodies count
// against the URL.
func (p *Pool) Post(ctx context.Context, path string, body []byte, auth Auth, read func(io.Reader) error) error {
	if base, ok := ctx.Value(urlKey{}).(string); ok {
		_, err := p.post(ctx, nil, joinURL(base, path), body, auth, read)
		return redact(err, auth.APIKey)
	}
	var f *flight
	if p.w.Generates != nil {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		f = &flight{cancel: cancel}
	}
	u, err := p.acquire(f)
	if err != nil {
		return err
	}
	if served, ok := ctx.Value(servedKey{}).(*string); ok {
		*served = u.bare
	}
	healthy, err := p.post(ctx, u, u.join(path), body, auth, read)
	err = redact(err, auth.APIKey)
	o, failure := answered, error(nil)
	var moved *backend.Error
	switch {
	case err == nil:
		// Answered, even if the watch gave up on it as it came.
		p.answers.Add(1)
	case errors.As(context.Cause(ctx), &moved) && moved.Moved:
		o, err = undecided, moved
	case ctx.Err() != nil:
		o = undecided
	case !healthy:
		o, failure = failed, err
	}
	p.release(u, o, failure, f)
	return err
}

type servedKey struct{}

// WithServed returns a context under which Post writes to *url the base URL
// of the server each request goes to, so the caller can say which of an
// endpoint's URLs answered without the backends passing it through.
func WithServed(ctx context.Context, url *string) context.Context {
	return context.WithValue(ctx, servedKey{}, url)
}

// bareURL is a URL without the user information and query that may carry
// credentials: what may be stored and shown.
func bareURL(raw string) string {
	u, err := neturl.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// post sends one request to url, of u (nil: not watched), and says
// whether the server answered sanely as well as how the request ended.
func (p *Pool) post(ctx context.Context, u *URL, url string, body []byte, auth Auth, read func(io.Reader) error) (bool, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return true, &backend.Error{Kind: backend.Fatal, Msg: "build request: " + err.Error()}
	}
	req.Header.Set("Content-Type", "application/json")
	for k, v := range auth.Headers {
		req.Header.Set(k, v)
	}
	if auth.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+auth.APIKey)
	}
	resp, err := p.client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return true, ctx.Err()
		}
		// net/http's error repeats the method and URL; say them once.
		var ue *neturl.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return false, Retryable("post "+url, err)
	}
	defer resp.Body.Close()
	var r io.Reader = resp.Body
	if u != nil && p.w.Generates != nil {
		p.alive(u)
		r = &lifeReader{r: resp.Body, p: p, u: u}
	}
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		e := StatusError(resp.StatusCode, resp.Header, b)
		if resp.StatusCode == http.StatusNotFound {
			// Most often a base URL without /v1, or a model name the server
			// does not serve: say which URL, since the body rarely does.
			e.Msg = fmt.Sprintf("%s (POST %s): check the endpoint's url (OpenAI-compatible servers want it to end in /v1) and model", e.Msg, url)
		}
		return resp.StatusCode < 500, e
	}
	if err := read(r); err != nil {
		if ctx.Err() != nil {
			return true, ctx.Err()
		}
		var be *backend.Error
		if errors.As(err, &be) {
			return true, be
		}
		return false, Retryable("read response of "+url, err)
	}
	return true, nil
}

// joinURL appends path to the base URL's path, keeping its query: some
// gateways want `?api-version=...` on every request, and plain string
// concatenation would put the path after the query.
func joinURL(base, path string) string {
	u, err := neturl.Parse(base)
	if err != nil || (u.RawQuery == "" && u.Fragment == "") {
		return base + path
	}
	u.Path = strings.TrimRight(u.Path, "/") + path
	u.RawPath = ""
	u.Fragment = ""
	return u.String()
}

// redact keeps the API key out of error messages, whatever a server echoes.
func redact(err error, key string) error {
	var be *backend.Error
	if key != "" && errors.As(err, &be) && strings.Contains(be.Msg, key) {
		cp := *be
		cp.Msg = strings.ReplaceAll(cp.Msg, key, "[redacted]")
		return &cp
	}
	return err
}

// Probe asks every URL for path (a cheap GET such as /models) and returns
// nil as soon as one gives any HTTP answer, whatever its status: the server
// is there and reading requests. It returns the last error when none
// answers before ctx ends, and nil at once when every URL refuses the
// connection, which the pool's own rests already deal with.
func (p *Pool) Probe(ctx context.Context, path string, auth Auth) error {
	errs := make(chan error, len(p.urls))
	for _, u := range p.urls {
		go func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, joinURL(u.Base, path), nil)
			if err != nil {
				errs <- nil
				return
			}
			for k, v := range auth.Headers {
				req.Header.Set(k, v)
			}
			if auth.APIKey != "" {
				req.Header.Set("Authorization", "Bearer "+auth.APIKey)
			}
			resp, err := p.client.Do(req)
			if err == nil {
				resp.Body.Close()
				errs <- nil
				return
			}
			if ctx.Err() == nil {
				// Refused or unreachable: not a hang, and not ours to judge.
				errs <- nil
				return
			}
			errs <- fmt.Errorf("no answer from %s within the request timeout", u.Base)
		}()
	}
	var last error
	for range p.urls {
		err := <-errs
		if err == nil {
			return nil
		}
		last = err
	}
	return last
}
