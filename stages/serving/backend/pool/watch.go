package pool

// The watch takes out of service a URL whose server accepts requests but
// produces nothing: its health may still answer (SGLang's /health counts
// any sign of life from its scheduler), so only its requests tell. A URL
// with requests in flight that shows no sign of life (response headers or
// body bytes: a streamed token, a whole answer) for Watch.Quiet, or for
// three times the longest silence any busy URL has had lately when that
// is longer (answers that are not streamed arrive whole, minutes apart),
// is asked for one token; when none comes within Watch.ProbeWithin, the
// URL is out, and its requests in flight are cancelled to be sent again
// to the others. Without streaming, no URL is judged before one has
// answered. A URL out of service is asked for one token again after its
// rest, which doubles at each silence, and is back once it answers.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/eaglet-dev/eaglet/stages/serving/backend"
)

// ErrHung is wrapped by the error OnDown hears for a URL taken out because
// its requests produced nothing while it accepted them.
var ErrHung = errors.New("hung")

// checkEvery is how often the watch looks for quiet URLs while requests
// are in flight.
const checkEvery = time.Second

// far is how many times the longest recent silence of a busy URL a
// silence must last before its URL is asked for a token.
const far = 3

// gapWindow is how long a silence counts as recent: the servers' pace
// changes with load over a run.
const gapWindow = 5 * time.Minute

// Watch is what the watch needs to know. Zero durations take the
// documented defaults.
type Watch struct {
	// Generates asks the server at a base URL for one token within ctx's
	// deadline; an answer, even with a status under 500, says it serves.
	Generates func(ctx context.Context, base string) error
	// Streams says that answers stream, so a server that works shows
	// first tokens within seconds and a URL may be judged before any has
	// answered. Whole answers may take minutes, and on a full server a
	// one-token request waits behind them: without streaming no URL is
	// judged before one has answered.
	Streams bool
	// Quiet is how long a URL with requests in flight may show no sign of
	// life, or three times the longest such silence of any URL lately if
	// that is longer, before it is asked for one token (10s); ProbeWithin
	// is how long that token may take (10s).
	Quiet, ProbeWithin time.Duration
	// OnDown, when set, is called without the pool's lock each time a URL
	// is taken out of service, hung or failing, with why: an error
	// wrapping ErrHung for a hung one, else the failure that did it. It
	// must not block long.
	OnDown func(url string, why error)
}

// Watch starts watching for hung URLs, as w says, and brings URLs out of
// service back once they answer one token rather than by handing them a
// request. It must be called before the first request.
func (p *Pool) Watch(w Watch) {
	if w.Quiet <= 0 {
		w.Quiet = 10 * time.Second
	}
	if w.ProbeWithin <= 0 {
		w.ProbeWithin = 10 * time.Second
	}
	p.w = w
}

// watchState is the pool's part of the watch.
type watchState struct {
	w Watch
	// answers counts the requests answered on any URL, for saying how many
	// the others answered while one was quiet.
	answers atomic.Int64
	// inflight counts the requests followed; the check runs while there
	// are some, so an idle pool has no timer running.
	inflight int
	check    *time.Timer
	// window is when the current window of recent silences began.
	window time.Time
}

// urlWatch is one URL's part of the watch.
type urlWatch struct {
	flights map[*flight]struct{}
	// busySince is when the URL last went from no request in flight to
	// one and life when it last showed a sign of life (Unix nanoseconds);
	// mark is the pool's answers at the later of the two.
	busySince, life, mark atomic.Int64
	// gap is the longest silence of the URL while busy in the current
	// window, gapPrev in the window before.
	gap     atomic.Int64
	gapPrev int64
	// checking is set while a token is asked of it; cleared is when one
	// last came (Unix nanoseconds), from which a silence counts again.
	checking bool
	cleared  int64
}

// flight is a request in flight, which the watch cancels when its URL is
// taken out as hung.
type flight struct{ cancel context.CancelCauseFunc }

// fly starts following f, sent to u (nil f: a request not followed). The
// caller holds p.mu.
func (p *Pool) fly(u *URL, f *flight, now time.Time) {
	if f == nil {
		return
	}
	if len(u.flights) == 0 {
		u.busySince.Store(now.UnixNano())
		u.mark.Store(p.answers.Load())
	}
	u.flights[f] = struct{}{}
	p.inflight++
	switch {
	case p.inflight > 1:
	case p.check == nil:
		p.window = now
		p.check = time.AfterFunc(checkEvery, p.checkQuiet)
	default:
		p.check.Reset(checkEvery)
	}
}

// land stops following f. The caller holds p.mu.
func (p *Pool) land(u *URL, f *flight) {
	if f == nil {
		return
	}
	delete(u.flights, f)
	if p.inflight--; p.inflight == 0 {
		p.check.Stop()
	}
}

// alive notes a sign of life of u, and the silence it ends.
func (p *Pool) alive(u *URL) {
	now := time.Now().UnixNano()
	g := now - max(u.life.Swap(now), u.busySince.Load())
	for old := u.gap.Load(); g > old && !u.gap.CompareAndSwap(old, g); old = u.gap.Load() {
	}
	u.mark.Store(p.answers.Load())
}

// lifeReader is a response body whose bytes are signs of life of its URL.
type lifeReader struct {
	r io.Reader
	p *Pool
	u *URL
}

func (l *lifeReader) Read(b []byte) (int, error) {
	n, err := l.r.Read(b)
	if n > 0 {
		l.p.alive(l.u)
	}
	return n, err
}

// checkQuiet asks each URL in service that has been quiet too long for a
// token, and runs again while requests are in flight.
func (p *Pool) checkQuiet() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.inflight == 0 {
		return
	}
	now := time.Now()
	if now.Sub(p.window) >= gapWindow {
		p.window = now
		for _, u := range p.urls {
			u.gapPrev = u.gap.Swap(0)
		}
	}
	var longest time.Duration
	for _, u := range p.urls {
		longest = max(longest, time.Duration(max(u.gap.Load(), u.gapPrev)))
	}
	if longest == 0 && !p.w.Streams {
		// No URL has answered yet: silence says nothing.
		p.check.Reset(checkEvery)
		return
	}
	limit := max(p.w.Quiet, far*longest)
	for _, u := range p.urls {
		if u.down() || u.checking || len(u.flights) == 0 {
			continue
		}
		quiet := now.Sub(time.Unix(0, max(u.life.Load(), u.busySince.Load(), u.cleared)))
		if quiet < limit {
			continue
		}
		u.checking = true
		go p.confirm(u, quiet, p.answers.Load()-u.mark.Load())
	}
	p.check.Reset(checkEvery)
}

// confirm asks u, quiet for that long while the others answered that many
// requests, for one token, and takes it out of service as hung when none
// comes: its requests in flight are cancelled, to be sent elsewhere.
func (p *Pool) confirm(u *URL, quiet time.Duration, others int64) {
	asked := time.Now()
	err := p.generates(u)
	p.mu.Lock()
	u.checking = false
	if serves(err) || u.down() || u.life.Load() > asked.UnixNano() {
		u.cleared = time.Now().UnixNano()
		p.mu.Unlock()
		return
	}
	msg := fmt.Sprintf("no token in %s", quiet.Round(time.Second))
	if len(p.urls) > 1 {
		msg += fmt.Sprintf(" while the others answered %d", others)
	}
	if timedOut(err) {
		msg += fmt.Sprintf(", nor to a one-token request in %s", p.w.ProbeWithin)
	} else {
		msg += ", and a one-token request failed: " + err.Error()
	}
	why := fmt.Errorf("%w: %s", ErrHung, msg)
	u.hung, u.cause, u.rest = true, why.Error(), p.cfg.Rest
	u.downUntil = time.Now().Add(u.rest)
	moved := &backend.Error{Kind: backend.Retryable, Moved: true, Msg: fmt.Sprintf("url hung: %s out of service (%s)", u.Base, msg)}
	for f := range u.flights {
		f.cancel(moved)
	}
	down := p.takeOut(u, why, fmt.Sprintf("out of service: %s; probing in %s, backing off to %s", msg, u.rest, p.cfg.MaxRest))
	p.mu.Unlock()
	if down != nil {
		down()
	}
}

// generates asks u for one token within ProbeWithin.
func (p *Pool) generates(u *URL) error {
	ctx, cancel := context.WithTimeout(context.Background(), p.w.ProbeWithin)
	defer cancel()
	return p.w.Generates(ctx, u.Base)
}

// serves says whether a probe's outcome shows a server reading requests:
// an answer, even an error status under 500 (a 429, a 400).
func serves(err error) bool {
	var be *backend.Error
	return err == nil || errors.As(err, &be) && be.Status > 0 && be.Status < 500
}

func timedOut(err error) bool { return errors.Is(err, context.DeadlineExceeded) }

// describe is a failed probe's cause, for the log and requests' errors.
func describe(err error, within time.Duration) string {
	if timedOut(err) {
		return fmt.Sprintf("%v: no token to a one-token request in %s", ErrHung, within)
	}
	return err.Error()
}

type urlKey struct{}

// WithURL returns a context under which Post sends to base whatever its
// state, outside the balancing and the watch: how Generates asks one URL.
func WithURL(ctx context.Context, base string) context.Context {
	return context.WithValue(ctx, urlKey{}, base)
}
