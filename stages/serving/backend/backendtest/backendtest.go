// Package backendtest drives a backend in tests the way a dispatcher
// would, retrying what the backend calls retryable.
package backendtest

import (
	"context"
	"errors"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
)

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
