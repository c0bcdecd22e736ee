package serve

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// adoptTimeout bounds the probe of a server an earlier run left up: it
// answered then, so one that is silent this long is not worth waiting for.
const adoptTimeout = 10 * time.Second

// Record is what a run keeps of a replica that may outlive eaglet (a job
// on a scheduler, a kept local server), so that the next run adopts it if
// it still answers and cancels it if not, and nothing up is forgotten.
type Record struct {
	Replica int    `json:"replica"`
	JobID   string `json:"job_id,omitempty"`
	PID     int    `json:"pid,omitempty"`
	// URL is where it answered; empty while a job has not said.
	URL       string    `json:"url,omitempty"`
	Log       string    `json:"log,omitempty"`
	StartedAt time.Time `json:"started_at"`
}

// record is the replica's Record.
func (r *Replica) record() Record {
	return Record{Replica: r.Index, JobID: r.JobID, PID: r.PID, URL: r.URL, Log: r.Log, StartedAt: r.StartedAt}
}

// recorded tells Config.Recorded of the replica, if it may outlive eaglet.
func (r *Replica) recorded() {
	if r.e.cfg.Recorded != nil && (r.e.s.Keep || r.e.s.scheduled()) {
		r.e.cfg.Recorded(r.record())
	}
}

// Adopted is the replica an earlier run recorded, bound to cfg's launch so
// that Stop stops it (the stop command, or its process group) and Ready
// probes it; for `eaglet servers`, which lists and stops what is up.
func Adopted(cfg Config, rec Record) (*Replica, error) {
	s, err := cfg.Options.resolve(cfg.Written)
	if err != nil {
		return nil, fmt.Errorf("launch %s: %w", cfg.Name, err)
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	e := &endpoint{cfg: cfg, s: s, environ: cfg.Environ}
	if e.environ == nil {
		e.environ = os.Environ()
	}
	r := &Replica{Index: rec.Replica, e: e, Server: Server{API: cfg.API, APIKey: cfg.APIKey}}
	r.adoptFields(rec)
	return r, nil
}

// adoptFields takes the recorded replica's job or process and address.
func (r *Replica) adoptFields(rec Record) {
	r.JobID, r.PID, r.URL, r.Log, r.StartedAt = rec.JobID, rec.PID, rec.URL, rec.Log, rec.StartedAt
	if r.Log == "" {
		r.Log = r.replicaFile("log")
	}
	if r.e.s.scheduled() {
		r.addressFile = r.replicaFile("address")
	} else if r.PID != 0 {
		r.proc = orphan(r.PID)
	}
}

// Answers probes the replica once, within adoptTimeout, reading a job's
// address afresh.
func (r *Replica) Answers(ctx context.Context) error {
	return r.probeReady(ctx, time.Now().Add(adoptTimeout))
}

// adopt takes over the server rec says an earlier run left up, if it
// still answers; if not, it is stopped (a job cancelled) and adopt
// reports false, for the replica to be started afresh.
func (r *Replica) adopt(ctx context.Context, rec Record) bool {
	name := r.e.cfg.Name
	r.adoptFields(rec)
	what := "job " + r.JobID
	if r.JobID == "" {
		what = "pid " + strconv.Itoa(r.PID)
	}
	err := r.Answers(ctx)
	if err == nil {
		r.ReadyAt = time.Now()
		r.e.cfg.Logf("%s replica %d: adopted %s, left by an earlier run, answering at %s", name, r.Index, what, r.URL)
		r.recorded()
		return true
	}
	r.e.cfg.Logf("%s replica %d: %s, left by an earlier run, does not answer (%v); stopping it and starting afresh", name, r.Index, what, err)
	if err := r.Stop(); err != nil {
		r.e.cfg.Logf("%v", err)
	}
	*r = Replica{Index: r.Index, GPUs: r.GPUs, e: r.e, Server: Server{API: r.API, APIKey: r.APIKey}}
	return false
}

// orphanPoll is how often the group of a kept server an earlier eaglet
// started is looked for: it is no child of this one, so no wait tells
// when it ends.
const orphanPoll = time.Second

// orphan watches process group pid, a kept server an earlier eaglet
// started, as startProcess watches a child: exited is closed once no live
// process is left in the group. Nil when none is left already.
func orphan(pid int) *process {
	if !groupAlive(pid) {
		return nil
	}
	p := &process{pid: pid, exited: make(chan struct{})}
	go func() {
		for groupAlive(pid) {
			time.Sleep(orphanPoll)
		}
		p.err = errOrphanGone
		close(p.exited)
	}()
	return p
}

// errOrphanGone is why an adopted local server ended: as no child of this
// eaglet, its exit status is not known.
var errOrphanGone = errors.New("its process group ended (started by an earlier run, its exit status is unknown)")
