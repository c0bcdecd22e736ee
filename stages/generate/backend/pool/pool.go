// Package pool is the HTTP plumbing the inference clients share: a set of
// URLs for one endpoint balanced by outstanding requests, with a URL that
// keeps failing taken out and probed back in; one transport sized for a
// thousand requests in flight; server-sent-event reading; and the
// classification of HTTP failures into backend errors.
package pool

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/eaglet-dev/eaglet/stages/generate/backend"
)

// Config shapes a Pool. Zero fields take the documented defaults.
type Config struct {
	URLs []string
	// FailAfter consecutive failures take a URL out (3).
	FailAfter int
	// Rest is how long a URL stays out before one request probes it (2s);
	// each failed probe doubles it, up to MaxRest (1m).
	Rest, MaxRest time.Duration
	// Client overrides the shared HTTP client, for tests.
	Client *http.Client
	// Log, when set, is told when a URL is taken out of service (with the
	// failure that did it), fails a probe, and comes back: the lines a
	// person reading the log the next morning needs.
	Log func(format string, args ...any)
}

// Pool picks URLs for requests; it is safe for concurrent use.
type Pool struct {
	cfg    Config
	client *http.Client
	mu     sync.Mutex
	urls   []*URL
}

// URL is one server of the pool, held between Acquire and Release.
type URL struct {
	Base        string
	outstanding int
	fails       int
	rest        time.Duration
	downUntil   time.Time
	probing     bool
	// cause is the last failure, for the error of requests that find
	// every URL out and for the log.
	cause string
	// bare is Base as it may be stored (bareURL), and last the last path
	// posted to with its URL (joinURL): both parsed once rather than at
	// every request.
	bare string
	last atomic.Pointer[joined]
}

type joined struct{ path, url string }

// join is joinURL(u.Base, path), kept for the next request to the same
// path (a client posts to one).
func (u *URL) join(path string) string {
	if j := u.last.Load(); j != nil && j.path == path {
		return j.url
	}
	j := &joined{path, joinURL(u.Base, path)}
	u.last.Store(j)
	return j.url
}

// New returns a pool over cfg.URLs.
func New(cfg Config) (*Pool, error) {
	if len(cfg.URLs) == 0 {
		return nil, errors.New("pool: no URLs")
	}
	if cfg.FailAfter <= 0 {
		cfg.FailAfter = 3
	}
	if cfg.Rest <= 0 {
		cfg.Rest = 2 * time.Second
	}
	if cfg.MaxRest <= 0 {
		cfg.MaxRest = time.Minute
	}
	p := &Pool{cfg: cfg, client: cfg.Client}
	if p.client == nil {
		p.client = SharedClient
	}
	for _, u := range cfg.URLs {
		base := strings.TrimRight(u, "/")
		p.urls = append(p.urls, &URL{Base: base, bare: bareURL(base), rest: cfg.Rest})
	}
	return p, nil
}

// Client returns the HTTP client requests go through.
func (p *Pool) Client() *http.Client { return p.client }

// Acquire picks the healthy URL with the fewest outstanding requests. A URL
// out of service whose rest is over is handed to exactly one request as a
// probe. When every URL is out, Acquire returns a retryable error asking to
// wait until the first comes back.
func (p *Pool) Acquire() (*URL, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	var best *URL
	for _, u := range p.urls {
		if u.down() {
			if !u.probing && !now.Before(u.downUntil) {
				u.probing = true
				u.outstanding++
				return u, nil
			}
			continue
		}
		if best == nil || u.outstanding < best.outstanding {
			best = u
		}
	}
	if best != nil {
		best.outstanding++
		return best, nil
	}
	wait := time.Duration(0)
	for _, u := range p.urls {
		if d := u.downUntil.Sub(now); wait == 0 || d < wait {
			wait = d
		}
	}
	msg := fmt.Sprintf("all %d URLs are out of service after repeated failures (last: %s)", len(p.urls), p.urls[0].cause)
	if len(p.urls) == 1 {
		msg = fmt.Sprintf("the endpoint's only URL %s is out of service after repeated failures: %s", p.urls[0].Base, p.urls[0].cause)
	}
	return nil, &backend.Error{Kind: backend.Retryable, RetryAfter: max(wait, time.Millisecond), NotSent: true, Msg: msg}
}

func (u *URL) down() bool { return !u.downUntil.IsZero() }

// Release returns u to the pool. A nil failure means the server answered
// sanely (any HTTP response but a 5xx); connection errors, timeouts and
// 5xx count toward taking u out.
func (p *Pool) Release(u *URL, failure error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	u.outstanding--
	probe := u.probing
	u.probing = false
	if failure == nil {
		if u.down() {
			p.log("%s is back in service", u.Base)
		}
		u.fails, u.downUntil, u.rest = 0, time.Time{}, p.cfg.Rest
		return
	}
	u.fails++
	u.cause = failure.Error()
	switch {
	case probe:
		u.rest = min(2*u.rest, p.cfg.MaxRest)
		u.downUntil = time.Now().Add(u.rest)
		p.log("%s still failing, next try in %s: %s", u.Base, u.rest, u.cause)
	case u.fails >= p.cfg.FailAfter && !u.down():
		u.downUntil = time.Now().Add(u.rest)
		p.log("%s out of service for %s after %d failures in a row: %s", u.Base, u.rest, u.fails, u.cause)
	}
}

func (p *Pool) log(format string, args ...any) {
	if p.cfg.Log != nil {
		p.cfg.Log(format, args...)
	}
}

// Healthy reports how many URLs are in service, for status lines.
func (p *Pool) Healthy() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, u := range p.urls {
		if !u.down() {
			n++
		}
	}
	return n
}

// SharedClient is the HTTP client of every pool: one transport, so idle
// connections are reused across endpoints, with room for 1,000 requests in
// flight per host and no cap over all hosts: a cap under what runs at once
// (64 endpoints x 256) closed connections as requests ended only to dial
// them again. It sets no timeout; requests are bounded by their context.
var SharedClient = &http.Client{Transport: &http.Transport{
	Proxy:                 http.ProxyFromEnvironment,
	DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
	MaxIdleConns:          0,
	MaxIdleConnsPerHost:   1100,
	IdleConnTimeout:       90 * time.Second,
	TLSHandshakeTimeout:   10 * time.Second,
	ExpectContinueTimeout: time.Second,
	ForceAttemptHTTP2:     true,
}}
