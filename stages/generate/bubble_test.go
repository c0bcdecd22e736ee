package generate_test

// Tests that wait (timeouts, Retry-After, a simulator producing tokens at
// a speed) run in a synctest bubble, whose clock moves only once every
// goroutine in it is blocked: they take no wall time, and the times they
// measure are the bubble's, the same on any machine under any load. A
// server such a test talks to runs in the bubble too, over in-memory
// connections: a goroutine waiting on a socket is not durably blocked,
// so the clock would never move.

import (
	"context"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/stages/generate/backend/pool"
)

// pipeListener hands out the server ends of the in-memory connections
// (net.Pipe) that dial makes.
type pipeListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return pipeAddr{} }

func (l *pipeListener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type pipeAddr struct{}

func (pipeAddr) Network() string { return "pipe" }
func (pipeAddr) String() string  { return "pipe" }

// bubbleClient makes every endpoint the test builds send through a client
// made in the bubble, dialling with dial, until the test ends:
// pool.SharedClient, made outside, keeps connections (and would make
// channels) that a bubble must not share with the rest of the tests.
func bubbleClient(t *testing.T, dial func(ctx context.Context, network, addr string) (net.Conn, error)) {
	t.Helper()
	tr := &http.Transport{DialContext: dial}
	shared := pool.SharedClient
	pool.SharedClient = &http.Client{Transport: tr}
	t.Cleanup(func() {
		pool.SharedClient = shared
		tr.CloseIdleConnections()
	})
}

// serveInBubble serves h to a test in a bubble and returns its base URL;
// every endpoint the test builds sends there, whatever host its URL names.
func serveInBubble(t *testing.T, h http.Handler) string {
	t.Helper()
	ln := &pipeListener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	// The bubble must end with no goroutine left: wait for the handlers
	// still running (on the bubble's clock).
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	bubbleClient(t, ln.dial)
	return "http://in-bubble"
}

// countingSim is a sim server in the bubble behind a counter of the
// generation requests it receives, as simtest.ServeCounting's is outside.
type countingSim struct {
	URL string
	n   atomic.Int64
}

func serveCountingSim(t *testing.T, cfg server.Config) *countingSim {
	t.Helper()
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	c := &countingSim{}
	c.URL = serveInBubble(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			c.n.Add(1)
		}
		s.ServeHTTP(w, r)
	}))
	return c
}

// Count returns the requests answered since the last Take.
func (c *countingSim) Count() int { return int(c.n.Load()) }

// Take returns the requests answered since the last call.
func (c *countingSim) Take() int { return int(c.n.Swap(0)) }
