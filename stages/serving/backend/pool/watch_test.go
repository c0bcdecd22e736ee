package pool

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/pipenet"
)

// fakeServer streams an answer of ten events 100 ms apart, or with hung
// set accepts requests and sends nothing; a request for one token (the
// watch's) is one event. With wait, an answer is not streamed: it comes
// whole after wait, and so does the one token, as on a full server where
// it waits for a place.
type fakeServer struct {
	hung atomic.Bool
	wait time.Duration
	sent atomic.Int64
}

func (s *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	s.sent.Add(1)
	if s.hung.Load() {
		<-r.Context().Done()
		return
	}
	if s.wait > 0 {
		time.Sleep(s.wait)
		fmt.Fprint(w, "data: x\n\ndata: [DONE]\n\n")
		return
	}
	events := 10
	if string(body) == "one" {
		events = 1
	}
	for range events {
		fmt.Fprint(w, "data: x\n\n")
		w.(http.Flusher).Flush()
		time.Sleep(100 * time.Millisecond)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
}

// watched is a pool over the hosts given, watching, whose log and OnDown
// calls the test reads.
type watched struct {
	*Pool
	mu     sync.Mutex
	logged []string
	downs  []error
}

func newWatched(t *testing.T, client *http.Client, streams bool, urls ...string) *watched {
	w := &watched{}
	p, err := New(Config{URLs: urls, Client: client, Log: func(format string, args ...any) {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.logged = append(w.logged, fmt.Sprintf(format, args...))
	}})
	if err != nil {
		t.Fatal(err)
	}
	p.Watch(Watch{Streams: streams,
		Generates: func(ctx context.Context, base string) error {
			return w.Post(WithURL(ctx, base), "/gen", []byte("one"), Auth{}, func(r io.Reader) error { return Events(r, func([]byte) error { return nil }) })
		},
		OnDown: func(url string, why error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			w.downs = append(w.downs, fmt.Errorf("%s: %w", url, why))
		}})
	w.Pool = p
	return w
}

// ask sends one request for an answer.
func (w *watched) ask() error {
	return w.Post(context.Background(), "/gen", []byte("answer"), Auth{}, func(r io.Reader) error { return Events(r, func([]byte) error { return nil }) })
}

func (w *watched) log() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.logged, "\n")
}

// TestWatch_HungURL: requests to a server that accepts them and sends
// nothing are moved off it once it has been quiet for Quiet and failed a
// one-token request, while the other server answers; OnDown hears it,
// the log says it once, and once the server generates again a probe puts
// it back in service.
func TestWatch_HungURL(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		good, bad := &fakeServer{}, &fakeServer{}
		bad.hung.Store(true)
		w := newWatched(t, pipenet.ServeHosts(t, map[string]http.Handler{"good": good, "bad": bad}), true, "http://good", "http://bad")
		start := time.Now()
		var wg sync.WaitGroup
		var moved, answered atomic.Int64
		for range 8 {
			wg.Go(func() {
				for range 40 {
					err := w.ask()
					var be *backend.Error
					switch {
					case err == nil:
						answered.Add(1)
					case errors.As(err, &be) && be.Moved:
						moved.Add(1)
						if took := time.Since(start); took > 25*time.Second {
							t.Errorf("a request was moved off the hung URL %s into the run; want within Quiet and ProbeWithin", took)
						}
					default:
						t.Errorf("ask: %v", err)
					}
				}
			})
		}
		wg.Wait()
		if moved.Load() == 0 || moved.Load() > 8 {
			t.Errorf("%d requests moved; want those in flight on the hung URL, at most one a worker", moved.Load())
		}
		if w.Healthy() != 1 {
			t.Fatalf("%d URLs in service; want the hung one out", w.Healthy())
		}
		if len(w.downs) != 1 || !errors.Is(w.downs[0], ErrHung) || !strings.HasPrefix(w.downs[0].Error(), "http://bad: hung: no token in 1") {
			t.Errorf("OnDown heard %v; want the hung URL once, wrapping ErrHung", w.downs)
		}
		want := "http://bad out of service: no token in 10s while the others answered "
		if log := w.log(); strings.Count(log, "out of service") != 1 || !strings.Contains(log, want) ||
			!strings.Contains(log, ", nor to a one-token request in 10s; probing in 2s, backing off to 1m0s") {
			t.Errorf("log:\n%s\nwant one line: %s..., nor to a one-token request in 10s; probing...", log, want)
		}
		// Out of service, it is asked for a token now and then, and no
		// request is sent to it; once it answers, it is back.
		before := bad.sent.Load()
		for range 20 {
			if err := w.ask(); err != nil {
				t.Fatal(err)
			}
			time.Sleep(500 * time.Millisecond)
		}
		if probes := bad.sent.Load() - before; probes == 0 || probes > 3 {
			t.Errorf("the hung URL was sent %d requests in 10s out of service; want a probe or two, with backoff", probes)
		}
		bad.hung.Store(false)
		for w.Healthy() != 2 {
			w.ask()
			time.Sleep(time.Second)
		}
		if took := time.Since(start); took > 3*time.Minute {
			t.Errorf("back in service after %s", took)
		}
		if log := w.log(); !strings.HasSuffix(log, "http://bad is back in service") {
			t.Errorf("log:\n%s\nwant it back in service, once", log)
		}
	})
}

// TestWatch_SlowNotHung: a full server whose whole answers take a minute
// (not streamed), and so does a one-token request, is quiet far longer
// than Quiet: it is left in service, no request moved, and it is not
// asked for a token before an answer has said how long answers take, nor
// after, since they keep coming at that pace.
func TestWatch_SlowNotHung(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		slow := &fakeServer{wait: time.Minute}
		w := newWatched(t, pipenet.ServeHosts(t, map[string]http.Handler{"slow": slow}), false, "http://slow")
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 5 {
					if err := w.ask(); err != nil {
						t.Errorf("ask: %v", err)
					}
				}
			})
		}
		wg.Wait()
		if log := w.log(); log != "" || w.Healthy() != 1 {
			t.Errorf("log %q, %d in service; want a slow server left in service", log, w.Healthy())
		}
		if asked := slow.sent.Load() - 20; asked != 0 {
			t.Errorf("%d one-token requests over 20 minute-long answers; want none", asked)
		}
	})
}

// TestWatch_RefusedComesBack: a URL that refuses connections is out after
// FailAfter failures and, with Generates, is brought back by a one-token
// request once it serves, no request of the run being sent to find out;
// while every URL is out the log says so, in the line that took the last.
func TestWatch_RefusedComesBack(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		srv := &fakeServer{}
		var refusing atomic.Bool
		refusing.Store(true)
		serving := pipenet.ServeHosts(t, map[string]http.Handler{"later": srv}).Transport
		w := newWatched(t, &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
			if refusing.Load() {
				return nil, errRefused
			}
			return serving.RoundTrip(r)
		})}, false, "http://later")
		for range 3 {
			if err := w.ask(); err == nil {
				t.Fatal("a request to a refusing URL succeeded")
			}
		}
		if w.Healthy() != 0 {
			t.Fatal("a URL refusing every request is still in service")
		}
		if log := w.log(); !strings.Contains(log, "http://later out of service for 2s after 3 failures in a row: ") ||
			!strings.HasSuffix(log, "; it is the endpoint's only URL: requests wait for it to come back, up to their timeout") {
			t.Errorf("log:\n%s\nwant the URL out, and that it was the only one", log)
		}
		err := w.ask()
		var be *backend.Error
		if !errors.As(err, &be) || !be.NotSent {
			t.Fatalf("ask with every URL out: %v; want it not sent", err)
		}
		refusing.Store(false)
		for w.Healthy() == 0 {
			w.ask()
			time.Sleep(time.Second)
		}
		if srv.sent.Load() != 1 {
			t.Errorf("the server got %d requests before it was back; want the one probe", srv.sent.Load())
		}
	})
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
