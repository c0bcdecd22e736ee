package stages

import (
	"context"
	"errors"
)

// ErrInterrupted is returned by a stage for a record it gave up on because
// the run is stopping; the engine leaves the record for the next run
// instead of marking it failed.
var ErrInterrupted = errors.New("interrupted before it finished")

type stopKey struct{}

// WithStop returns a context that carries the run's stop signal. Records
// in progress run under a context that is not cancelled on Ctrl-C, so work
// already paid for can finish; stages use Stopping to avoid starting more
// (a retry, a queued request).
func WithStop(ctx context.Context, stop <-chan struct{}) context.Context {
	return context.WithValue(ctx, stopKey{}, stop)
}

// Stopping reports whether the run carried by ctx is stopping.
func Stopping(ctx context.Context) bool {
	stop, _ := ctx.Value(stopKey{}).(<-chan struct{})
	if stop == nil {
		return false
	}
	select {
	case <-stop:
		return true
	default:
		return false
	}
}

// StopChan returns the run's stop signal, or nil (which never fires).
func StopChan(ctx context.Context) <-chan struct{} {
	stop, _ := ctx.Value(stopKey{}).(<-chan struct{})
	return stop
}
