package generate_test

// Tests that wait (timeouts, Retry-After, a simulator producing tokens at
// a speed) run in a synctest bubble, whose clock moves only once every
// goroutine in it is blocked: they take no wall time, and the times they
// measure are the bubble's, the same on any machine under any load. A
// server such a test talks to runs in the bubble too, over in-memory
// connections (pipenet): a goroutine waiting on a socket is not durably
// blocked, so the clock would never move.

import (
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/serving/pipenet"
)

// useClient makes every endpoint the test builds send through c, one made
// in the bubble, until the test ends: pool.SharedClient, made outside,
// keeps connections (and would make channels) that a bubble must not
// share with the rest of the tests.
func useClient(t *testing.T, c *http.Client) {
	t.Helper()
	shared := pool.SharedClient
	pool.SharedClient = c
	t.Cleanup(func() { pool.SharedClient = shared })
}

// serveInBubble serves h to a test in a bubble and returns its base URL;
// every endpoint the test builds sends there, whatever host its URL names.
func serveInBubble(t *testing.T, h http.Handler) string {
	t.Helper()
	useClient(t, pipenet.Serve(t, h))
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
