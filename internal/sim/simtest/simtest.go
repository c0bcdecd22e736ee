// Package simtest starts the sim server for tests, so client and stage
// tests run over real HTTP.
package simtest

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/sim/server"
)

// Serve starts a sim server for the test and returns its base URL.
func Serve(t testing.TB, cfg server.Config) string {
	t.Helper()
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s)
	t.Cleanup(func() { hs.Close(); s.Close() })
	return hs.URL
}

// Counting is a sim server behind a counter of the generation requests it
// receives, as a request-counting proxy in front of a real server would be;
// Down makes it answer 502 to everything, as a dead upstream does.
type Counting struct {
	URL  string
	Down atomic.Bool
	n    atomic.Int64
}

// ServeCounting starts a counting sim server for the test.
func ServeCounting(t testing.TB, cfg server.Config) *Counting {
	t.Helper()
	s, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c := &Counting{}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if c.Down.Load() {
			http.Error(w, "upstream unavailable", http.StatusBadGateway)
			return
		}
		if r.Method == http.MethodPost {
			c.n.Add(1)
		}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { hs.Close(); s.Close() })
	c.URL = hs.URL
	return c
}

// Count returns the requests answered since the last Take.
func (c *Counting) Count() int { return int(c.n.Load()) }

// Take returns the requests answered since the last call.
func (c *Counting) Take() int { return int(c.n.Swap(0)) }
