package serve

import (
	"context"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// stopSlack is what a stop command gets beyond the grace period: `kubectl
// delete` waits for the pods' own termination grace (30 s by default)
// before it returns, scancel and `ray job stop` return at once.
const stopSlack = time.Minute

// submit runs a replica's submit command, its output appended to the
// replica's log, and finds the job's id in that output.
func (r *Replica) submit(ctx context.Context) error {
	g := r.g
	r.Log = r.replicaFile("log")
	r.addressFile = r.replicaFile("address")
	// A stale address is an earlier job's, perhaps still answering.
	if err := os.Remove(r.addressFile); err != nil && !os.IsNotExist(err) {
		return r.startError(err)
	}
	argv, err := expandAll(g.s.Argv, map[string]string{"replica": strconv.Itoa(r.Index), "address_file": r.addressFile})
	if err != nil {
		return r.startError(err)
	}
	logf, err := os.OpenFile(r.Log, os.O_CREATE|os.O_RDWR|os.O_APPEND, 0o644)
	if err != nil {
		return r.startError(err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== eaglet: %s replica %d submitted to %s %s: %s\n", g.cfg.Name, r.Index, g.s.Scheduler,
		r.StartedAt.Format(time.RFC3339), strings.Join(argv, " "))
	from, err := logf.Seek(0, io.SeekEnd)
	if err != nil {
		return r.startError(err)
	}
	ctx, cancel := context.WithDeadline(ctx, r.StartedAt.Add(g.s.readyTimeout))
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = g.cfg.Dir
	// sbatch and `ray job submit` pass the environment on to the job, so a
	// batch script may read these instead of taking arguments.
	cmd.Env = append(g.environ[:len(g.environ):len(g.environ)],
		"EAGLET_ADDRESS_FILE="+r.addressFile, "EAGLET_REPLICA="+strconv.Itoa(r.Index))
	// Output to the file, not a pipe: a submit that leaves something
	// running behind it holding its stdout cannot make the wait hang.
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr(false)
	runErr := cmd.Run()
	out := make([]byte, 64<<10)
	n, _ := logf.ReadAt(out, from)
	out = out[:n]
	if runErr != nil {
		return r.startError(fmt.Errorf("submit %s: %s", filepath.Base(argv[0]), exitReason(runErr)))
	}
	m := g.s.jobID.FindStringSubmatch(string(out))
	if m == nil {
		return r.startError(fmt.Errorf("the submit printed no job id matching %q (job_id); cancel by hand whatever it started", g.s.JobID))
	}
	r.JobID = m[0]
	if len(m) > 1 {
		r.JobID = m[1]
	}
	where := r.addressFile
	if g.s.Address != "" {
		where = "address " + g.s.Address
	}
	g.cfg.Logf("%s replica %d: submitted %s job %s; waiting for it at %s, log %s", g.cfg.Name, r.Index, g.s.Scheduler, r.JobID, where, r.Log)
	return nil
}

// address is where a job serves, as its address file or the address
// option says: "" until it is known.
func (r *Replica) address() (string, error) {
	var a string
	if r.g.s.Address != "" {
		var err error
		if a, err = expand(r.g.s.Address, r.jobVals()); err != nil {
			return "", err
		}
	} else {
		b, err := os.ReadFile(r.addressFile)
		if err != nil && !os.IsNotExist(err) {
			return "", err
		}
		a, _, _ = strings.Cut(strings.TrimSpace(string(b)), "\n")
	}
	if a = strings.TrimSpace(a); a == "" {
		return "", nil
	}
	if !strings.Contains(a, "://") {
		a = "http://" + a
	}
	u, err := url.Parse(a)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("job %s's address %q is neither a URL nor host:port", r.JobID, a)
	}
	if u.Path = strings.TrimSuffix(u.Path, "/"); u.Path == "" {
		u.Path = r.API.path()
	}
	return u.String(), nil
}

// jobLog is the job's own log as the options name it ("" when they do not).
func (r *Replica) jobLog() string {
	if r.g.s.Log == "" || r.JobID == "" {
		return ""
	}
	p, err := expand(r.g.s.Log, r.jobVals())
	if err != nil {
		return ""
	}
	if !filepath.IsAbs(p) && r.g.cfg.Dir != "" {
		p = filepath.Join(r.g.cfg.Dir, p)
	}
	return p
}

func (r *Replica) jobVals() map[string]string {
	return map[string]string{"job_id": r.JobID, "replica": strconv.Itoa(r.Index)}
}

// cancelJob runs the stop command for the replica's job, its output
// appended to the replica's log.
func (r *Replica) cancelJob() error {
	g := r.g
	argv, err := expandAll(g.s.Stop, r.jobVals())
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(r.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== eaglet: stopping job %s: %s\n", r.JobID, strings.Join(argv, " "))
	ctx, cancel := context.WithTimeout(context.Background(), g.s.grace+stopSlack)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env = g.cfg.Dir, g.environ
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = sysProcAttr(false)
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s replica %d: stop job %s: %s (log %s)", g.cfg.Name, r.Index, r.JobID, exitReason(err), r.Log)
	}
	os.Remove(r.addressFile)
	return nil
}
