package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"
)

// endpoint is what the replicas of an endpoint share.
type endpoint struct {
	cfg Config
	s   *settings
	// environ is the commands' environment, Config.Environ or eaglet's.
	environ []string
}

// commandLine is argv as the logs show it, secrets scrubbed.
func (e *endpoint) commandLine(argv []string) string {
	line := strings.Join(argv, " ")
	if e.cfg.Redact != nil {
		line = e.cfg.Redact(line)
	}
	return line
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

	e           *endpoint
	proc        *process
	addressFile string
	stopOnce    sync.Once
	stopErr     error
}

// Exited is closed when a local server's process has ended, for whatever
// reason. It is nil, never closed, for a job, whose end only its silence
// tells.
func (r *Replica) Exited() <-chan struct{} {
	if r.proc == nil {
		return nil
	}
	return r.proc.exited
}

// LogTail is the last lines of the replica's log, which say why a server
// exited far better than its exit status does.
func (r *Replica) LogTail() []string { return tail(r.Log, tailLines) }

// ExitErr is why a local server's process ended, once Exited is closed:
// nil when it exited with status 0.
func (r *Replica) ExitErr() error {
	if r.proc == nil {
		return nil
	}
	return r.proc.err
}

// Stop stops the replica: SIGTERM to a local server's process group, then
// SIGKILL after the grace period, or the stop command for a job. It waits
// until the processes are gone or the command is done; calling it again
// returns the first call's result.
func (r *Replica) Stop() error {
	r.stopOnce.Do(func() {
		switch {
		case r.JobID != "":
			r.stopErr = r.cancelJob()
		case r.proc != nil:
			if err := r.proc.kill(r.e.s.grace); err != nil {
				r.stopErr = fmt.Errorf("%s replica %d: %w", r.e.cfg.Name, r.Index, err)
			}
		case r.PID == 0:
			return // never started
		}
		// Else a kept server of an earlier run whose group is gone: only
		// its record is left to forget.
		if r.stopErr == nil {
			r.e.cfg.Logf("%s replica %d: stopped", r.e.cfg.Name, r.Index)
			if r.e.cfg.Forget != nil {
				r.e.cfg.Forget(r.Index)
			}
		}
	})
	return r.stopErr
}

// start launches the replica and waits until it answers.
func (r *Replica) start(ctx context.Context, port int) error {
	r.StartedAt = time.Now()
	var err error
	if r.e.s.scheduled() {
		err = r.submit(ctx)
	} else {
		err = r.launch(port)
	}
	if err != nil {
		return r.startError(err)
	}
	return r.waitReady(ctx)
}

// launch starts a local replica's server on port.
func (r *Replica) launch(port int) error {
	e := r.e
	argv, err := expandAll(e.s.Argv, map[string]string{
		"port": strconv.Itoa(port), "replica": strconv.Itoa(r.Index), "gpus": strings.Join(r.GPUs, ","),
	})
	if err != nil {
		return err
	}
	env, devices := e.environ, ""
	if len(r.GPUs) > 0 {
		devices = "CUDA_VISIBLE_DEVICES=" + strings.Join(r.GPUs, ",")
		env = append(env[:len(env):len(env)], devices)
		devices = ", " + devices
	}
	log, err := r.openLog()
	if err != nil {
		return err
	}
	defer log.Close() // the server has its own copy
	fmt.Fprintf(log, "=== eaglet: %s replica %d on port %d%s, started %s: %s\n", e.cfg.Name, r.Index, port, devices,
		r.StartedAt.Format(time.RFC3339), e.commandLine(argv))
	if r.proc, err = startProcess(argv, e.cfg.Dir, env, log, e.s.Keep); err != nil {
		fmt.Fprintf(log, "=== eaglet: %v\n", err)
		return err
	}
	r.PID = r.proc.pid
	r.URL = "http://127.0.0.1:" + strconv.Itoa(port) + e.cfg.API.path()
	r.recorded()
	e.cfg.Logf("%s replica %d: started (pid %d, port %d%s), log %s", e.cfg.Name, r.Index, r.PID, port, devices, r.Log)
	return nil
}

// submit runs a replica's submit command and finds its job's id.
func (r *Replica) submit(ctx context.Context) error {
	e := r.e
	r.addressFile = r.replicaFile("address")
	// A stale address is an earlier job's, perhaps still answering.
	if err := os.Remove(r.addressFile); err != nil && !os.IsNotExist(err) {
		return err
	}
	argv, err := expandAll(e.s.Argv, map[string]string{"replica": strconv.Itoa(r.Index), "address_file": r.addressFile})
	if err != nil {
		return err
	}
	log, err := r.openLog()
	if err != nil {
		return err
	}
	defer log.Close()
	fmt.Fprintf(log, "=== eaglet: %s replica %d submitted to %s %s: %s\n", e.cfg.Name, r.Index, e.s.Scheduler,
		r.StartedAt.Format(time.RFC3339), e.commandLine(argv))
	ctx, cancel := context.WithDeadline(ctx, r.StartedAt.Add(e.s.readyTimeout))
	defer cancel()
	// sbatch and `ray job submit` pass the environment on to the job, so a
	// batch script may read these instead of taking arguments.
	env := append(e.environ[:len(e.environ):len(e.environ)], "EAGLET_ADDRESS_FILE="+r.addressFile, "EAGLET_REPLICA="+strconv.Itoa(r.Index))
	out, err := runCommand(ctx, argv, e.cfg.Dir, env, log)
	if err != nil {
		return fmt.Errorf("submit %w", err)
	}
	id, ok := jobID(e.s.jobID, out)
	if !ok {
		return fmt.Errorf("the submit printed no job id matching %q (job_id); cancel by hand whatever it started", e.s.JobID)
	}
	r.JobID = id
	// Recorded before it answers: an eaglet killed while the job loads
	// leaves it on record, for the next run to adopt or cancel.
	r.recorded()
	where := r.addressFile
	if e.s.Address != "" {
		where = "address " + e.s.Address
	}
	e.cfg.Logf("%s replica %d: submitted %s job %s; waiting for it at %s, log %s", e.cfg.Name, r.Index, e.s.Scheduler, r.JobID, where, r.Log)
	return nil
}

// cancelJob runs the stop command for the replica's job.
func (r *Replica) cancelJob() error {
	e := r.e
	fail := func(err error) error {
		return fmt.Errorf("%s replica %d: stop job %s: %w (log %s)", e.cfg.Name, r.Index, r.JobID, err, r.Log)
	}
	argv, err := expandAll(e.s.Stop, r.jobVals())
	if err != nil {
		return fail(err)
	}
	log, err := r.openLog()
	if err != nil {
		return fail(err)
	}
	defer log.Close()
	fmt.Fprintf(log, "=== eaglet: stopping job %s: %s\n", r.JobID, e.commandLine(argv))
	ctx, cancel := context.WithTimeout(context.Background(), e.s.grace+stopSlack)
	defer cancel()
	if _, err := runCommand(ctx, argv, e.cfg.Dir, e.environ, log); err != nil {
		return fail(err)
	}
	os.Remove(r.addressFile)
	return nil
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
	timeout := r.e.s.readyTimeout
	deadline := r.StartedAt.Add(timeout)
	pause := firstPoll
	var last error
	for {
		err := r.probeReady(ctx, deadline)
		if err == nil {
			r.ReadyAt = time.Now()
			if r.JobID != "" {
				r.recorded() // now with its URL
			}
			r.e.cfg.Logf("%s replica %d: ready at %s after %s", r.e.cfg.Name, r.Index, r.URL, r.ReadyAt.Sub(r.StartedAt).Round(time.Millisecond))
			return nil
		}
		// A probe the deadline cut short says less than the one before.
		if last == nil || !errors.Is(err, context.DeadlineExceeded) {
			last = err
		}
		select {
		case <-r.Exited():
			return r.startError(fmt.Errorf("%w (%v)", ErrExited, exitReason(r.proc.err)))
		case <-ctx.Done():
			return r.startError(ctx.Err())
		default:
		}
		if !time.Now().Before(deadline) {
			return r.startError(fmt.Errorf("%w after %s: %v", ErrNotReady, timeout, last))
		}
		t := time.NewTimer(min(pause, time.Until(deadline)))
		select {
		case <-r.Exited():
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
		pause = min(2*pause, maxPoll)
	}
}

// probeReady runs one readiness probe, cut short if the process exits.
func (r *Replica) probeReady(ctx context.Context, deadline time.Time) error {
	if r.e.s.scheduled() {
		url, err := r.address()
		if err != nil {
			return err
		}
		r.URL = url
	}
	if end := time.Now().Add(probeTimeout); end.Before(deadline) {
		deadline = end
	}
	ctx, cancel := context.WithDeadline(ctx, deadline)
	defer cancel()
	if exited := r.Exited(); exited != nil {
		go func() {
			select {
			case <-exited:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return r.Ready(ctx)
}

// address is where a job serves, as its address file or the address
// option says. It is read again at every probe, so a job that rewrites
// it, or is caught writing it, is found where it ends up.
func (r *Replica) address() (string, error) {
	a, from := r.e.s.Address, "address "+r.e.s.Address
	if a != "" {
		var err error
		if a, err = expand(a, r.jobVals()); err != nil {
			return "", err
		}
	} else {
		b, err := os.ReadFile(r.addressFile)
		if err != nil && !os.IsNotExist(err) {
			return "", err
		}
		a, _, _ = strings.Cut(strings.TrimSpace(string(b)), "\n")
		from = r.addressFile
	}
	if a = strings.TrimSpace(a); a == "" {
		return "", fmt.Errorf("job %s has not written its address to %s", r.JobID, from)
	}
	return parseAddress(a, r.API)
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
	return &StartError{Name: r.e.cfg.Name, Replica: r.Index, Log: log, Tail: tail(log, tailLines), Err: err}
}

// jobLog is the job's own log as the options name it ("" when they do not).
func (r *Replica) jobLog() string {
	if r.e.s.Log == "" || r.JobID == "" {
		return ""
	}
	p, err := expand(r.e.s.Log, r.jobVals())
	if err != nil {
		return ""
	}
	if !filepath.IsAbs(p) && r.e.cfg.Dir != "" {
		p = filepath.Join(r.e.cfg.Dir, p)
	}
	return p
}

func (r *Replica) jobVals() map[string]string {
	return map[string]string{"job_id": r.JobID, "replica": strconv.Itoa(r.Index)}
}

// openLog opens the replica's log to append to it.
func (r *Replica) openLog() (*os.File, error) {
	r.Log = r.replicaFile("log")
	return os.OpenFile(r.Log, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
}

// replicaFile is the path of one of a replica's files in the log
// directory, by its extension: "log", "address".
func (r *Replica) replicaFile(ext string) string {
	return filepath.Join(r.e.cfg.LogDir, r.e.cfg.Name+"-"+strconv.Itoa(r.Index)+"."+ext)
}
