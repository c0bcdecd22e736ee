// Package pool is the HTTP plumbing the inference clients share: a set of
// URLs for one endpoint balanced by outstanding requests, with a URL that
// keeps failing or hangs taken out and probed back in; one transport sized
// for a thousand requests in flight; server-sent-event reading; and the
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

	"github.com/eaglet-dev/eaglet/stages/serving/backend"
)

// Config shapes a Pool. Zero fields take the documented defaults.
type Config struct {
	URLs []string
	// FailAfter consecutive failures take a URL out (3).
	FailAfter int
	// Rest is how long a URL stays out before it is probed (2s); each
	// failed probe doubles it, up to MaxRest (1m).
	Rest, MaxRest time.Duration
	// Client overrides the shared HTTP client, for tests.
	Client *http.Client
	// Log, when set, is told when a URL is taken out of service (with the
	// failure that did it) and comes back: the lines a person reading the
	// log the next morning needs, each transition once.
	Log func(format string, args ...any)
}

// Pool picks URLs for requests; it is safe for concurrent use.
type Pool struct {
	cfg    Config
	client *http.Client
	mu     sync.Mutex
	urls   []*URL
	watchState
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
	// every URL out and for the log; hung says it is out for producing
	// nothing rather than for failing.
	cause string
	hung  bool
	// bare is Base as it may be stored (bareURL), and last the last path
	// posted to with its URL (joinURL): both parsed once rather than at
	// every request.
	bare string
	last atomic.Pointer[joined]
	urlWatch
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
		p.urls = append(p.urls, newURL(base, cfg.Rest))
	}
	return p, nil
}

// Client returns the HTTP client requests go through.
func (p *Pool) Client() *http.Client { return p.client }

// newURL is the server at base, in service, resting rest after failing.
func newURL(base string, rest time.Duration) *URL {
	return &URL{Base: base, bare: bareURL(base), rest: rest, urlWatch: urlWatch{flights: map[*flight]struct{}{}}}
}

// Acquire picks the healthy URL with the fewest outstanding requests. A URL
// out of service whose rest is over is probed: handed to exactly one
// request, or when watched asked for one token beside. When every URL is
// out, Acquire returns a retryable error asking to wait until the first
// may be back.
func (p *Pool) Acquire() (*URL, error) { return p.acquire(nil) }

// acquire is Acquire for a request the watch follows (f, when not nil).
func (p *Pool) acquire(f *flight) (*URL, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	var best *URL
	for _, u := range p.urls {
		if u.down() {
			if !u.probing && !now.Before(u.downUntil) {
				u.probing = true
				if p.w.Generates != nil {
					u.downUntil = now.Add(p.w.ProbeWithin)
					go p.probeBack(u)
					continue
				}
				u.outstanding++
				p.fly(u, f, now)
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
		p.fly(best, f, now)
		return best, nil
	}
	wait := time.Duration(0)
	for _, u := range p.urls {
		if d := u.downUntil.Sub(now); wait == 0 || d < wait {
			wait = d
		}
	}
	return nil, &backend.Error{Kind: backend.Retryable, RetryAfter: max(wait, time.Millisecond), NotSent: true, Msg: p.allDown()}
}

// allDown says why no URL is in service. The caller holds p.mu.
func (p *Pool) allDown() string {
	u, after := p.urls[0], " after repeated failures"
	if u.hung {
		after = ""
	}
	if len(p.urls) == 1 {
		return fmt.Sprintf("the endpoint's only URL %s is out of service%s: %s", u.Base, after, u.cause)
	}
	return fmt.Sprintf("all %d URLs are out of service%s (last: %s)", len(p.urls), after, u.cause)
}

func (u *URL) down() bool { return !u.downUntil.IsZero() }

// outcome is what a request's end says of its URL.
type outcome int

const (
	// answered: any HTTP response but a 5xx.
	answered outcome = iota
	// failed: a connection error, a 5xx or an unreadable body.
	failed
	// undecided: the request's context ended first, or the watch moved it.
	undecided
)

// Release returns u to the pool. A nil failure means the server answered
// sanely (any HTTP response but a 5xx); connection errors, timeouts and
// 5xx count toward taking u out.
func (p *Pool) Release(u *URL, failure error) {
	o := answered
	if failure != nil {
		o = failed
	}
	p.release(u, o, failure, nil)
}

// release is Release for a request the watch followed (f, when not nil).
func (p *Pool) release(u *URL, o outcome, failure error, f *flight) {
	p.mu.Lock()
	u.outstanding--
	p.land(u, f)
	probe := u.probing && p.w.Generates == nil
	if probe {
		u.probing = false
	}
	switch o {
	case undecided:
		p.mu.Unlock()
		return
	case answered:
		if u.down() {
			p.back(u)
		}
		u.fails, u.downUntil, u.rest = 0, time.Time{}, p.cfg.Rest
		p.mu.Unlock()
		return
	}
	u.fails++
	u.cause = failure.Error()
	var down func()
	switch {
	case probe:
		u.rest = min(2*u.rest, p.cfg.MaxRest)
		u.downUntil = time.Now().Add(u.rest)
	case u.fails >= p.cfg.FailAfter && !u.down():
		u.downUntil = time.Now().Add(u.rest)
		down = p.takeOut(u, failure, fmt.Sprintf("out of service for %s after %d failures in a row: %s", u.rest, u.fails, u.cause))
	}
	p.mu.Unlock()
	if down != nil {
		down()
	}
}

// takeOut logs that u, just marked down, is out of service and why, and
// says so once more when no URL is left; it returns the call to OnDown to
// make once the lock is released. The caller holds p.mu.
func (p *Pool) takeOut(u *URL, why error, line string) func() {
	left := 0
	for _, o := range p.urls {
		if !o.down() {
			left++
		}
	}
	switch {
	case left > 0:
	case len(p.urls) == 1:
		line += "; it is the endpoint's only URL: requests wait for it to come back, up to their timeout"
	default:
		line += fmt.Sprintf("; none of the endpoint's %d URLs is in service: requests wait for one to come back, up to their timeout", len(p.urls))
	}
	p.log("%s %s", u.Base, line)
	if p.w.OnDown == nil {
		return nil
	}
	return func() { p.w.OnDown(u.Base, why) }
}

// back puts u in service again. The caller holds p.mu.
func (p *Pool) back(u *URL) {
	p.log("%s is back in service", u.Base)
	u.fails, u.downUntil, u.rest, u.hung = 0, time.Time{}, p.cfg.Rest, false
}

// probeBack asks u, out of service, for one token, and puts it back in
// service when it answers; else it rests twice as long.
func (p *Pool) probeBack(u *URL) {
	err := p.generates(u)
	p.mu.Lock()
	defer p.mu.Unlock()
	u.probing = false
	switch {
	case !u.down(): // a request in flight there answered meanwhile
		return
	case serves(err):
		p.back(u)
		return
	case !u.hung || !timedOut(err):
		u.cause, u.hung = describe(err, p.w.ProbeWithin), timedOut(err)
	}
	u.rest = min(2*u.rest, p.cfg.MaxRest)
	u.downUntil = time.Now().Add(u.rest)
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
