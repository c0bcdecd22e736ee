package endpoint

// Request resilience in one place: the endpoint's timeouts, outages and
// fatal answers (Endpoint.generate), and an instance's retries with
// backoff (Client.Ask).

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
)

// Tally counts what one record's requests took.
type Tally struct {
	// Requests is how many were sent; Retries counts the failures tried
	// again, by kind ("http 503", "network: EOF").
	Requests int
	Retries  map[string]int
}

// retried counts a failure that is tried again, by its kind.
func (tl *Tally) retried(err error) {
	if tl.Retries == nil {
		tl.Retries = map[string]int{}
	}
	tl.Retries[retryKind(err)]++
}

// jsonOffset is where a JSON decoder says a body broke ("after offset 812").
var jsonOffset = regexp.MustCompile(` (after|at) offset \d+`)

// retryKind groups failures for people: "http 503", "network: EOF",
// "network: connection refused", or a message's first words.
func retryKind(err error) string {
	var be *backend.Error
	if errors.As(err, &be) && be.Status != 0 {
		return fmt.Sprintf("http %d", be.Status)
	}
	msg := err.Error()
	if strings.HasPrefix(msg, "post ") || strings.HasPrefix(msg, "read response of ") {
		// "post URL: dial tcp ADDR: connect: connection refused": the URL
		// and address vary, the last words say what happened. A body that
		// is not JSON says where it broke, which varies too.
		last := msg[strings.LastIndex(msg, ": ")+2:]
		if strings.Contains(msg, ": jsontext: ") || strings.Contains(msg, ": json: ") {
			return "bad response: " + strings.TrimSpace(jsonOffset.ReplaceAllString(last, ""))
		}
		return "network: " + last
	}
	kind, _, _ := strings.Cut(msg, ":")
	return kind
}

// Client is one generate instance's use of an endpoint.
type Client struct {
	// Endpoint is where the requests go.
	Endpoint *Endpoint
	// Instance names the instance's queue for the endpoint's slots, and
	// Share weighs it against the other instances' queues.
	Instance string
	Share    float64
	// Timeout is how long a request may go without a sign of life, and
	// Retries how many times a retryable failure is tried again.
	Timeout time.Duration
	Retries int
}

// Ask makes one request, retrying what may succeed on a second try; tl
// counts what it took.
func (c *Client) Ask(ctx context.Context, req *backend.Request, tl *Tally) (*conv.Generation, error) {
	var outage time.Duration
	for attempt := 0; ; attempt++ {
		gen, err := c.Endpoint.generate(ctx, c.Instance, c.Share, req, c.Timeout)
		var be *backend.Error
		var early unsent
		if notSent := errors.As(err, &early) || errors.As(err, &be) && be.NotSent; !notSent {
			tl.Requests++
		}
		if err == nil {
			return gen, nil
		}
		kind, wait := backend.Classify(err)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.As(err, &be) && be.Moved {
			// Its URL was taken out as hung: the request goes at once to
			// another, and the record loses no attempt for the server's
			// fault. It was sent, so it counts, as the retry it is.
			tl.retried(err)
			attempt--
			if stages.Stopping(ctx) {
				return nil, stages.ErrInterrupted
			}
			continue
		}
		if errors.As(err, &be) && be.NotSent {
			// The endpoint is resting after failures; waiting for it is not
			// an attempt, so an outage shorter than the request timeout
			// delays records without failing them. A longer one fails them
			// at once, the later records too, so a dead server ends the run
			// in about the timeout instead of a wait per record; each record
			// still tries, so one of them probes the server back in.
			down := c.Endpoint.downFor()
			if outage >= c.Timeout || down >= c.Timeout {
				return nil, fmt.Errorf("endpoint %s out of service: no URL answered for %s; %w", c.Endpoint.Spec.Name, max(outage, down).Round(time.Second), err)
			}
			wait = min(wait, c.Timeout-max(outage, down))
			attempt--
			outage += wait
		} else if kind != backend.Retryable || c.Retries == 0 {
			return nil, err
		} else if attempt >= c.Retries {
			// Say the retries are spent, or the next morning's reader
			// cannot tell a flaky server from one that never answered.
			// The kind before the first colon stays first: progress lines
			// and status group failures by it.
			kind, rest, _ := strings.Cut(err.Error(), ": ")
			return nil, &attemptsError{msg: fmt.Sprintf("%s (%d attempts): %s", kind, attempt+1, rest), err: err}
		}
		if kind == backend.Retryable && !(be != nil && be.NotSent) {
			tl.retried(err)
		}
		if wait == 0 {
			wait = backoff(attempt)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-stages.StopChan(ctx):
			// The run is stopping: no new attempt; the next run tries again.
			return nil, stages.ErrInterrupted
		}
	}
}

// attemptsError is a retryable failure that outlived its retries; it keeps
// the last error for its kind.
type attemptsError struct {
	msg string
	err error
}

func (e *attemptsError) Error() string { return e.msg }

func (e *attemptsError) Unwrap() error { return e.err }

// backoff is exponential with full jitter, from 0.5 s up to 30 s.
func backoff(attempt int) time.Duration {
	d := min(500*time.Millisecond<<attempt, 30*time.Second)
	return time.Duration(rand.Int64N(int64(d)) + 1)
}

// unsent is an error returned before a request left: the endpoint had
// stopped, its probe failed, or the run ended while the request waited
// for a slot. It is not counted as a request sent.
type unsent struct{ error }

func (u unsent) Unwrap() error { return u.error }

// errTimedOut cancels a request that gave no sign of life for its timeout.
var errTimedOut = errors.New("request timed out")

// generate sends one request for an instance once the endpoint gives it
// a slot, its share of the endpoint weighted by share.
func (e *Endpoint) generate(ctx context.Context, instance string, share float64, req *backend.Request, timeout time.Duration) (*conv.Generation, error) {
	if f := e.fatal.Load(); f != nil {
		return nil, unsent{f}
	}
	if err := e.probe(ctx, timeout); err != nil {
		return nil, unsent{err}
	}
	if err := e.lim.acquire(ctx, instance, share); err != nil {
		return nil, unsent{err}
	}
	if req.Sent != nil {
		req.Sent()
	}
	start := time.Now()
	tokens := 0
	defer func() { e.lim.release(instance, time.Since(start), tokens) }()
	// The timeout counts from the last sign of life: a streamed answer that
	// keeps producing tokens is never cut, however long it runs (a
	// 32k-token reasoning answer at 20 tokens/s takes 27 minutes, and each
	// retry would throw that work away). Without streaming the first sign
	// is the answer, so the timeout bounds the whole request.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watchdog := time.AfterFunc(timeout, func() { cancel(errTimedOut) })
	defer watchdog.Stop()
	r := *req
	gaps := e.lim.watchStream(req.MaxTokens)
	prompt := 0
	defer func() { gaps.end(prompt, tokens) }()
	var first atomic.Int64
	r.Progress = func(p backend.Progress) {
		watchdog.Reset(timeout)
		gaps.event(p)
		first.CompareAndSwap(0, time.Now().UnixMilli())
		if req.Progress != nil {
			req.Progress(p)
		}
	}
	var served string
	gen, err := e.be.Generate(pool.WithServed(ctx, &served), &r)
	if err == nil {
		// The report's throughput and in-flight charts are made of these.
		gen.Timing = &conv.Timing{Sent: start.UnixMilli(), FirstToken: first.Load(), Finished: time.Now().UnixMilli(), URL: served}
		if e.stacks != nil && served != "" {
			gen.Served = e.stacks.Stamp(ctx, served, gen.Served)
		}
	}
	var be *backend.Error
	switch {
	case errors.As(err, &be) && be.NotSent:
		e.downSince.CompareAndSwap(0, time.Now().UnixNano())
	case err == nil || errors.As(err, &be) && be.Status > 0:
		// The server answered: it is in service.
		e.downSince.Store(0)
	}
	if context.Cause(ctx) != errTimedOut {
		e.observe(err, be)
	}
	switch {
	case err == nil:
		tokens, prompt = gen.CompletionTokens, gen.PromptTokens
	case context.Cause(ctx) == errTimedOut:
		msg := fmt.Sprintf("nothing received for %s", timeout)
		if !e.streams && timeout < shortTimeout {
			msg += "; without streaming the timeout bounds the whole answer, so a short one fails the long answers and leaves the kept ones biased short (raise timeout or set stream true)"
		}
		return nil, &backend.Error{Kind: backend.Retryable, Msg: msg}
	default:
		var be *backend.Error
		if errors.As(err, &be) && be.Kind == backend.Fatal {
			e.fatal.CompareAndSwap(nil, &backend.Error{Kind: backend.Fatal, Status: be.Status,
				Msg: fmt.Sprintf("endpoint %s stopped: %s", e.Spec.Name, be.Msg)})
		}
	}
	return gen, err
}
