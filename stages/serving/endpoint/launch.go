package endpoint

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
	"github.com/eaglet-dev/eaglet/stages/serving/managed"
)

// launched is the part of an endpoint whose servers eaglet starts: the
// group of replicas, and how many of the spec's instances still use it.
type launched struct {
	group *managed.Group
	logf  func(string, ...any)
	mu    sync.Mutex
	// users counts the instances that may still send to the endpoint in
	// this run; when the last is done the servers are stopped (-1: not
	// counted).
	users int
}

func newLaunched(spec *specs.Spec, ep *specs.Endpoint, logf func(string, ...any)) (*launched, error) {
	if logf == nil {
		logf = func(string, ...any) {}
	}
	g, err := managed.New(spec, ep, logf)
	if err != nil {
		return nil, err
	}
	return &launched{group: g, logf: logf, users: -1}, nil
}

// attach gives the group the pool its replicas' URLs serve in, has a
// group with no replica left stop the endpoint, and has the watchdog's
// finding of a hung replica (its health answers, its generations do not)
// restart it, as an exited one is: a hung server does not come back by
// being probed.
func (l *launched) attach(e *Endpoint, p *pool.Pool) {
	l.group.Rotation = p
	l.group.Down = func(err error) {
		e.fatal.CompareAndSwap(nil, &backend.Error{Kind: backend.Fatal, Msg: fmt.Sprintf("endpoint %s stopped: %v", e.Spec.Name, err)})
	}
	e.OnDown = func(url string, why error) {
		if errors.Is(why, pool.ErrHung) {
			l.group.Restart(url, why.Error())
		}
	}
}

// KeepJobs has the endpoint record in cp each server it launches that may
// outlive the run (a job, a kept server), and adopt or cancel what an
// earlier run recorded there. Without it nothing is recorded.
func (e *Endpoint) KeepJobs(cp stages.Checkpoints) {
	if e.launched != nil && cp != nil {
		e.launched.group.Jobs = cp
	}
}

// Launch starts the endpoint's servers when eaglet launches them and they
// are not up yet, and waits until they answer. The generate stage calls it
// before a record's requests, so servers start once there is something
// to send, never for a run that finds every answer stored. A failure to
// start stops the endpoint, as a fatal answer does; a run stopping while
// the servers load returns stages.ErrInterrupted. For an endpoint given by
// URL it returns nil at once.
func (e *Endpoint) Launch(ctx context.Context) error {
	if e.launched == nil {
		return nil
	}
	if f := e.fatal.Load(); f != nil {
		return f
	}
	wait, cancel := context.WithCancel(ctx)
	defer cancel()
	if stop := stages.StopChan(ctx); stop != nil {
		go func() {
			select {
			case <-stop:
				cancel()
			case <-wait.Done():
			}
		}()
	}
	err := e.launched.group.Start(wait)
	switch {
	case err == nil:
		return nil
	case stages.Stopping(ctx):
		return stages.ErrInterrupted
	case ctx.Err() != nil:
		return ctx.Err()
	}
	e.fatal.CompareAndSwap(nil, &backend.Error{Kind: backend.Fatal, Msg: fmt.Sprintf("endpoint %s stopped: %v", e.Spec.Name, err)})
	return e.fatal.Load()
}

// Users sets how many instances of the run may send to the endpoint, so
// that the last one's Release stops its servers; without it they stop
// when the run ends (Close).
func (e *Endpoint) Users(n int) {
	if e.launched == nil {
		return
	}
	e.launched.mu.Lock()
	defer e.launched.mu.Unlock()
	e.launched.users = n
}

// Release says an instance is done with the endpoint for this run; the
// last of those Users counts stops the servers eaglet launched (unless
// kept), which then do not hold their GPUs through the stages after.
func (e *Endpoint) Release() {
	if e.launched == nil {
		return
	}
	l := e.launched
	l.mu.Lock()
	last := false
	if l.users > 0 {
		l.users--
		last = l.users == 0
	}
	l.mu.Unlock()
	if !last {
		return
	}
	if err := l.group.Close(); err != nil {
		l.logf("endpoint %s: %v", e.Spec.Name, err)
	}
}

// Close stops the servers eaglet launched for the endpoint, unless the
// launch keeps them: the run closes every endpoint when it ends, however
// it ends.
func (e *Endpoint) Close() error {
	if e.launched == nil {
		return nil
	}
	return e.launched.group.Close()
}

// Replicas reports what the servers eaglet launched for the endpoint did
// in this run; ok is false for an endpoint given by URL.
func (e *Endpoint) Replicas() (f managed.Figures, ok bool) {
	if e.launched == nil {
		return managed.Figures{}, false
	}
	return e.launched.group.Figures(), true
}
