// Package simtest starts the sim server for tests and retries requests the
// way a dispatcher would, so client and stage tests run over real HTTP.
package simtest

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/stages/generate/backend"
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

// Retry sends req until it succeeds, fails for good, or 50 attempts are
// spent, with a 2s timeout per attempt, waiting as long as each retryable
// error asks.
func Retry(b backend.Backend, req *backend.Request) (*conv.Generation, error) {
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		g, err := b.Generate(ctx, req)
		cancel()
		if err == nil {
			return g, nil
		}
		kind, wait := backend.Classify(err)
		if errors.Is(err, context.DeadlineExceeded) {
			kind = backend.Retryable
		}
		if kind != backend.Retryable || attempt == 50 {
			return nil, err
		}
		time.Sleep(wait)
	}
}
