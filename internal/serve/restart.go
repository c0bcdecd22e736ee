package serve

import (
	"context"
	"fmt"
)

// Restart replaces replica i by a new server started as the first was,
// with the same devices and a port of its own (a job: a submit of its
// own). It stops the old one first if it still runs, so that its devices
// are free, then starts the new one and waits until it answers, as Start
// does; from then on Replicas and URLs give the new one. A failure is a
// *StartError, with the old replica left stopped, or ErrStopped when the
// group was stopped meanwhile.
func (g *Group) Restart(ctx context.Context, i int) (*Replica, error) {
	g.mu.Lock()
	if g.stopped {
		g.mu.Unlock()
		return nil, ErrStopped
	}
	if i < 0 || i >= len(g.replicas) {
		g.mu.Unlock()
		return nil, fmt.Errorf("%s has no replica %d", g.cfg.Name, i)
	}
	old := g.replicas[i]
	g.mu.Unlock()
	if err := old.Stop(); err != nil {
		return nil, err
	}
	port := 0
	if !g.s.scheduled() {
		ports, err := freePorts(1)
		if err != nil {
			return nil, fmt.Errorf("restart %s replica %d: %w", g.cfg.Name, i, err)
		}
		port = ports[0]
	}
	r := &Replica{Index: i, GPUs: old.GPUs, e: g.endpoint, Server: Server{API: g.cfg.API, APIKey: g.cfg.APIKey}}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(g.life, cancel)()
	err := r.start(ctx, port)
	g.mu.Lock()
	stopped := g.stopped
	if err == nil && !stopped {
		g.replicas[i] = r
	}
	g.mu.Unlock()
	switch {
	case err == nil && !stopped:
		return r, nil
	case stopped:
		err = ErrStopped
	}
	r.Stop() // whatever of it started
	return nil, err
}
