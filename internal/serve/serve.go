// Package serve starts the inference servers an endpoint launches instead
// of naming by URL, waits until they answer, and stops them: replicas on
// this machine, each from the same argv with its own port and share of the
// GPUs, or jobs on a scheduler (Slurm, Kubernetes, Ray) that one command
// submits and another cancels. Its probes say whether a server is ready
// and whether it still generates, for a watchdog to use.
package serve

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-multierror"
)

// Config is one endpoint's launch.
type Config struct {
	// Name is the endpoint's, in log file names and messages ("target").
	Name string
	API  API
	// Options is the endpoint's `launch:` mapping.
	Options Options
	// LogDir holds a log per replica and the address files jobs write;
	// beside the store, so it is on the shared filesystem a job sees.
	LogDir string
	// Dir is the commands' working directory ("": eaglet's).
	Dir string
	// Environ is the commands' environment (nil: eaglet's own). Its
	// CUDA_VISIBLE_DEVICES is what replicas share when Options.GPUs is
	// empty.
	Environ []string
	// APIKey, when the servers require one, is sent by the probes.
	APIKey string
	// Logf reports each replica's start, readiness and stop (nil: silent).
	Logf func(format string, args ...any)
}

// Group is an endpoint's running replicas.
type Group struct {
	cfg      Config
	s        *settings
	environ  []string
	replicas []*Replica
	// unwatch stops the stop that the start context's end would trigger.
	unwatch func() bool
}

// Start launches every replica at once and returns when all of them
// answer. If one fails (its process exits, its job reports no address, it
// does not answer within ready_timeout), the others are stopped and the
// error lists each failure, a *StartError with the last lines of its log.
//
// The servers live as long as ctx, as a command of exec.CommandContext
// does: when it ends (Ctrl-C), they are stopped, unless Options.Keep
// leaves them up. Close stops them when the endpoint is done with them.
func Start(ctx context.Context, cfg Config) (*Group, error) {
	if !cfg.API.valid() {
		return nil, fmt.Errorf("launch %s: api %q cannot be launched: want %s or %s", cfg.Name, cfg.API, SGLang, OpenAI)
	}
	if cfg.Name == "" {
		cfg.Name = "server"
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	s, err := cfg.Options.resolve()
	if err != nil {
		return nil, fmt.Errorf("launch %s: %w", cfg.Name, err)
	}
	g := &Group{cfg: cfg, s: s, environ: cfg.Environ}
	if g.environ == nil {
		g.environ = os.Environ()
	}
	shares := make([]Devices, s.Replicas)
	ports := make([]int, s.Replicas)
	if !s.scheduled() {
		if shares, err = s.shares(g.environ); err != nil {
			return nil, fmt.Errorf("launch %s: %w", cfg.Name, err)
		}
		if ports, err = freePorts(s.Replicas); err != nil {
			return nil, fmt.Errorf("launch %s: %w", cfg.Name, err)
		}
	}
	// Absolute, as a job on another node and a command in Dir need it.
	if g.cfg.LogDir, err = filepath.Abs(cfg.LogDir); err != nil {
		return nil, fmt.Errorf("launch %s: %w", cfg.Name, err)
	}
	if err := os.MkdirAll(g.cfg.LogDir, 0o755); err != nil {
		return nil, fmt.Errorf("launch %s: %w", cfg.Name, err)
	}
	for i := range s.Replicas {
		g.replicas = append(g.replicas, &Replica{Index: i, GPUs: shares[i], g: g,
			Server: Server{API: cfg.API, APIKey: cfg.APIKey}})
	}

	// The first failure cancels the other starts: the group is of no use,
	// and their GPUs are better freed at once than after a long load.
	startCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(g.replicas))
	var wg sync.WaitGroup
	for i, r := range g.replicas {
		wg.Go(func() {
			if errs[i] = r.start(startCtx, ports[i]); errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	var failed *multierror.Error
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			failed = multierror.Append(failed, err)
		}
	}
	if failed == nil && ctx.Err() != nil {
		failed = multierror.Append(failed, fmt.Errorf("launch %s: %w", cfg.Name, ctx.Err()))
	}
	if failed != nil {
		failed.ErrorFormat = listErrors
		if err := g.Stop(); err != nil {
			failed = multierror.Append(failed, err)
		}
		return nil, failed
	}
	if !s.Keep {
		g.unwatch = context.AfterFunc(ctx, func() { g.Stop() })
	}
	return g, nil
}

// Replicas are the group's replicas, by index.
func (g *Group) Replicas() []*Replica { return g.replicas }

// URLs are the replicas' API base URLs, by index.
func (g *Group) URLs() []string {
	urls := make([]string, len(g.replicas))
	for i, r := range g.replicas {
		urls[i] = r.URL
	}
	return urls
}

// Close ends the endpoint's use of its servers: it stops them, or leaves
// them up when the options keep them.
func (g *Group) Close() error {
	if g.s.Keep {
		return nil
	}
	g.unwatch()
	return g.Stop()
}

// Stop stops every replica, kept or not, and waits until they are gone.
func (g *Group) Stop() error {
	errs := make([]error, len(g.replicas))
	var wg sync.WaitGroup
	for i, r := range g.replicas {
		wg.Go(func() { errs[i] = r.Stop() })
	}
	wg.Wait()
	var all *multierror.Error
	for _, err := range errs {
		if err != nil {
			all = multierror.Append(all, err)
		}
	}
	if all != nil {
		all.ErrorFormat = listErrors
	}
	return all.ErrorOrNil()
}

// Replica is one server of a group: a process on this machine or a job on
// a scheduler. Its Server is where it answers once the group has started.
type Replica struct {
	Index int
	Server
	// GPUs are the devices a local replica was given (its
	// CUDA_VISIBLE_DEVICES); none for a job, whose scheduler assigns them.
	GPUs Devices
	// Log is the file the server's output (or the submit's and the stop's)
	// goes to.
	Log string
	// PID is a local server's process, the leader of its process group.
	PID int
	// JobID is the scheduler's id of a replica's job.
	JobID string
	// StartedAt is when it was launched or submitted, ReadyAt when it
	// first answered.
	StartedAt, ReadyAt time.Time

	g           *Group
	exited      chan struct{}
	exitErr     error
	addressFile string
	stopOnce    sync.Once
	stopErr     error
}

// Exited is closed when a local server's process has ended, for whatever
// reason. It is nil, never closed, for a job, whose end only its silence
// tells.
func (r *Replica) Exited() <-chan struct{} { return r.exited }

// ExitErr is why a local server's process ended, once Exited is closed:
// nil when it exited with status 0.
func (r *Replica) ExitErr() error { return r.exitErr }

// Stop stops the replica: SIGTERM to a local server's process group, then
// SIGKILL after the grace period, or the stop command for a job. It waits
// until the processes are gone or the command is done; calling it again
// returns the first call's result.
func (r *Replica) Stop() error {
	r.stopOnce.Do(func() {
		switch {
		case r.JobID != "":
			r.stopErr = r.cancelJob()
		case r.PID != 0:
			r.stopErr = r.kill()
		default:
			return // never started
		}
		if r.stopErr == nil {
			r.g.cfg.Logf("%s replica %d: stopped", r.g.cfg.Name, r.Index)
		}
	})
	return r.stopErr
}

// start launches the replica and waits until it answers.
func (r *Replica) start(ctx context.Context, port int) error {
	r.StartedAt = time.Now()
	var err error
	if r.g.s.scheduled() {
		err = r.submit(ctx)
	} else {
		err = r.launch(port)
	}
	if err != nil {
		return err
	}
	return r.waitReady(ctx)
}

// Polling of a starting server: often at first, for a small model that is
// up in seconds, then every few seconds through a large model's load.
const (
	firstPoll = 100 * time.Millisecond
	maxPoll   = 5 * time.Second
	// probeTimeout bounds one readiness probe: more than the 20 s SGLang's
	// /health may take to generate its own token.
	probeTimeout = 30 * time.Second
)

// waitReady probes the replica, with growing pauses, until it answers,
// its process exits, ctx ends or ready_timeout has passed since it was
// launched.
func (r *Replica) waitReady(ctx context.Context) error {
	timeout := r.g.s.readyTimeout
	deadline := r.StartedAt.Add(timeout)
	pause := firstPoll
	var last error
	for {
		err := r.probeReady(ctx, deadline)
		if err == nil {
			r.ReadyAt = time.Now()
			r.g.cfg.Logf("%s replica %d: ready at %s after %s", r.g.cfg.Name, r.Index, r.URL, r.ReadyAt.Sub(r.StartedAt).Round(time.Millisecond))
			return nil
		}
		// A probe the deadline cut short says less than the one before.
		if last == nil || !errors.Is(err, context.DeadlineExceeded) {
			last = err
		}
		select {
		case <-r.exited:
			return r.startError(fmt.Errorf("%w (%v)", ErrExited, exitReason(r.exitErr)))
		case <-ctx.Done():
			return r.startError(ctx.Err())
		default:
		}
		if !time.Now().Before(deadline) {
			return r.startError(fmt.Errorf("%w after %s: %v", ErrNotReady, timeout, last))
		}
		t := time.NewTimer(min(pause, time.Until(deadline)))
		select {
		case <-r.exited:
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		pause = min(2*pause, maxPoll)
	}
}

// probeReady runs one readiness probe, cut short if the process exits.
func (r *Replica) probeReady(ctx context.Context, deadline time.Time) error {
	if r.g.s.scheduled() {
		url, err := r.address()
		switch {
		case err != nil:
			return err
		case url == "" && r.g.s.Address != "":
			return fmt.Errorf("address %q is empty", r.g.s.Address)
		case url == "":
			return fmt.Errorf("job %s has not written its address to %s", r.JobID, r.addressFile)
		}
		r.URL = url
	}
	if end := time.Now().Add(probeTimeout); end.Before(deadline) {
		deadline = end
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if r.exited != nil {
		go func() {
			select {
			case <-r.exited:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return r.Ready(ctx)
}

// startError is a failure to start with the tail of the log that tells
// why: a job's own log when the options name it and it exists, else the
// replica's.
func (r *Replica) startError(err error) error {
	log := r.Log
	if jl := r.jobLog(); jl != "" {
		if _, statErr := os.Stat(jl); statErr == nil {
			log = jl
		}
	}
	return &StartError{Name: r.g.cfg.Name, Replica: r.Index, Log: log, Tail: tail(log, tailLines), Err: err}
}

// freePorts returns n distinct ports free on this machine: all listened on
// at once, so no two replicas get the same, then released for the servers.
// Another process may still take one in between, and then its server
// fails to bind and the error shows it.
func freePorts(n int) ([]int, error) {
	ports := make([]int, n)
	for i := range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port: %w", err)
		}
		defer ln.Close()
		ports[i] = ln.Addr().(*net.TCPAddr).Port
	}
	return ports, nil
}

// replicaFile is the path of one of a replica's files in the log
// directory, by its extension: "log", "address".
func (r *Replica) replicaFile(ext string) string {
	return filepath.Join(r.g.cfg.LogDir, r.g.cfg.Name+"-"+strconv.Itoa(r.Index)+"."+ext)
}
