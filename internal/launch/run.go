package launch

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/eaglet-dev/eaglet/internal/proc"
	"github.com/hashicorp/go-multierror"
)

// Run launches the command of every shard Plan says is due, at most
// Options.Concurrency at once, and checkpoints each launch in cp when
// it starts and when it ends. It returns every shard's status in order,
// and an error listing the shards whose command failed (with their log
// files) so the caller's stage fails and the next run retries them.
//
// When ctx is cancelled (Ctrl-C) no further shard is launched; running
// commands are waited for (on_interrupt: wait) or sent SIGTERM, then
// SIGKILL after the grace period (stop, the default), and the error wraps
// ctx.Err(). A stopped shard is launched again by the next run.
func Run(ctx context.Context, cp Checkpoints, job *Job) ([]Status, error) {
	statuses, err := Plan(cp, job)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(job.LogDir, 0o755); err != nil {
		return statuses, fmt.Errorf("launch %s: %w", job.Instance, err)
	}
	if err := job.stopLeftovers(cp); err != nil {
		return statuses, err
	}
	var (
		wg    sync.WaitGroup
		slots = make(chan struct{}, job.Options.concurrency())
		// failed[i] is shard i's failure, so they are listed in shard order.
		failed = make([]error, len(statuses))
	)
	for i := range statuses {
		st := &statuses[i]
		if !st.Launch {
			continue
		}
		if !acquire(ctx, slots) {
			st.Launch, st.Reason = false, "not launched: interrupted ("+st.Reason+")"
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-slots; wg.Done() }()
			rec, err := job.launch(ctx, cp, st.Shard, st.Reason)
			if rec != nil {
				st.Record = rec
			}
			failed[i] = err
		}()
	}
	wg.Wait()
	var errs *multierror.Error
	for _, err := range failed {
		if err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	if ctx.Err() != nil {
		errs = multierror.Append(errs, fmt.Errorf("launch %s: %w", job.Instance, ctx.Err()))
	}
	if errs != nil {
		errs.ErrorFormat = listErrors
	}
	return statuses, errs.ErrorOrNil()
}

// acquire takes a slot, or none and false once ctx is done.
func acquire(ctx context.Context, slots chan struct{}) bool {
	select {
	case slots <- struct{}{}:
		if ctx.Err() == nil {
			return true
		}
		<-slots
		return false
	case <-ctx.Done():
		return false
	}
}

// launch runs one shard's command to its end and records it; why is
// Plan's reason, for the log. The record is stored as started before the
// process exists, so a kill at any point leaves either no process or a
// launch the next run repeats.
func (j *Job) launch(ctx context.Context, cp Checkpoints, sh Shard, why string) (*Record, error) {
	argv, err := j.argv(sh)
	if err != nil {
		return nil, err
	}
	env, err := j.env(sh)
	if err != nil {
		return nil, err
	}
	logPath, err := filepath.Abs(filepath.Join(j.LogDir, fmt.Sprintf("shard-%05d.log", sh.Index)))
	if err != nil {
		return nil, err
	}
	rec := &Record{Shard: sh.Index, Version: sh.Version, ArgvHash: j.hash(argv),
		StartedAt: time.Now().Round(0), ExitCode: -1, Log: logPath, Tag: newTag(sh.Index)}
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("launch %s shard %d: %w", j.Instance, sh.Index, err)
	}
	defer logf.Close()
	fmt.Fprintf(logf, "=== eaglet %s: shard %d (version %s) launched %s: %s\n", j.Instance, sh.Index, short(sh.Version),
		rec.StartedAt.Format(time.RFC3339), j.redact(strings.Join(argv, " ")))
	if err := rec.save(cp); err != nil {
		return nil, fmt.Errorf("launch %s: %w", j.Instance, err)
	}
	before, err := j.stamps(sh)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = j.Dir
	cmd.Env = append(append(os.Environ(), env...), tagEnv+"="+rec.Tag)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = proc.SysProcAttr(false)
	start := time.Now()
	j.log("shard %d (%d tokens): launched (%s), log %s", sh.Index, sh.Tokens, why, logPath)
	if err := cmd.Start(); err != nil {
		rec.Error = j.redact(err.Error())
	} else {
		rec.Error = j.wait(ctx, cmd, rec.Tag)
		rec.ExitCode = cmd.ProcessState.ExitCode()
	}
	rec.FinishedAt, rec.Duration = time.Now().Round(0), time.Since(start)
	if rec.Error == "" && j.Options.Outputs != "" {
		rec.Outputs, rec.Error = j.written(sh, before)
	}
	fmt.Fprintf(logf, "=== eaglet %s: shard %d ended after %s: %s\n", j.Instance, sh.Index, round(rec.Duration), outcome(rec))
	if err := rec.save(cp); err != nil {
		return rec, fmt.Errorf("launch %s: %w", j.Instance, err)
	}
	j.log("shard %d: %s after %s", sh.Index, outcome(rec), round(rec.Duration))
	if rec.Error != "" {
		return rec, fmt.Errorf("shard %d: %s (log %s)", sh.Index, rec.Error, logPath)
	}
	return rec, nil
}

// stamps are the files the outputs glob of a shard finds, by path, before
// its command starts: what the command leaves as it was is not its output.
func (j *Job) stamps(sh Shard) (map[string]os.FileInfo, error) {
	if j.Options.Outputs == "" {
		return nil, nil
	}
	found, err := j.outputs(sh)
	if err != nil {
		return nil, err
	}
	m := make(map[string]os.FileInfo, len(found))
	for _, f := range found {
		if fi, err := os.Stat(f); err == nil {
			m[f] = fi
		}
	}
	return m, nil
}

// written returns the files matching a shard's outputs that its command
// created or changed since before was taken, or why there are none. A
// file counts as changed when it is another file (replaced), or its size or
// modification time differs: the launch's own clock is not compared with
// the file system's, which stamps files from a coarser one.
func (j *Job) written(sh Shard, before map[string]os.FileInfo) ([]string, string) {
	found, err := j.outputs(sh)
	if err != nil {
		return nil, err.Error()
	}
	var out []string
	for _, f := range found {
		fi, err := os.Stat(f)
		if err != nil {
			continue
		}
		if old, ok := before[f]; ok && os.SameFile(old, fi) && old.Size() == fi.Size() && old.ModTime().Equal(fi.ModTime()) {
			continue
		}
		out = append(out, f)
	}
	switch {
	case len(out) > 0:
		return out, ""
	case len(found) > 0:
		return nil, fmt.Sprintf("exited 0 but wrote nothing that matches outputs %s: the %d file(s) matching were there before it started and it left them unchanged", j.Options.Outputs, len(found))
	}
	return nil, "exited 0 but nothing matches outputs " + j.Options.Outputs
}

// wait waits for a started command and returns why it failed ("" for
// success). On ctx's end it lets the command finish (wait) or stops its
// process group: SIGTERM, then SIGKILL after the grace period, and SIGKILL
// once the command has exited too, for what it left running in its group,
// and then for what carries its tag outside the group.
func (j *Job) wait(ctx context.Context, cmd *exec.Cmd, tag string) string {
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		select {
		case err = <-done: // it ended as Ctrl-C came: its own end counts
			return j.exitReason(err)
		default:
		}
		if j.Options.OnInterrupt == Wait {
			err = <-done
			break
		}
		pgid := cmd.Process.Pid
		syscall.Kill(-pgid, syscall.SIGTERM)
		timer := time.NewTimer(j.Options.grace())
		select {
		case err = <-done:
			timer.Stop()
		case <-timer.C:
			syscall.Kill(-pgid, syscall.SIGKILL)
			err = <-done
		}
		syscall.Kill(-pgid, syscall.SIGKILL)
		stop(tagged([]string{tag})[tag], 0)
		if err == nil {
			// Even a clean exit on SIGTERM may have left the work undone.
			return "stopped by interrupt"
		}
		return "stopped by interrupt: " + err.Error()
	}
	return j.exitReason(err)
}

// stopLeftovers stops what launches cut short by a killed eaglet left
// running: the command itself, when it outlived eaglet's death (it may
// ignore the SIGTERM the kernel sends it then), and what it started, which
// no signal of eaglet's death reaches (torchrun's workers when torchrun was
// killed outright, holding their GPUs). They are found by their launch's
// tag and stopped as Ctrl-C stops a shard, before any shard is launched
// again, so a relaunch never runs beside its stale self.
func (j *Job) stopLeftovers(cp Checkpoints) error {
	stored, err := records(cp)
	if err != nil {
		return err
	}
	var tags []string
	shardOf := map[string]int{}
	for _, r := range stored {
		if !r.Finished() && r.Tag != "" {
			tags = append(tags, r.Tag)
			shardOf[r.Tag] = r.Shard
		}
	}
	for tag, pids := range tagged(tags) {
		j.log("shard %d: %d process(es) of its launch cut short by a killed eaglet still running (pids %v): stopping them (SIGTERM, SIGKILL after %s)",
			shardOf[tag], len(pids), pids, j.Options.grace())
		stop(pids, j.Options.grace())
	}
	return nil
}

// exitReason says why a command that ended failed, "" when it succeeded.
func (j *Job) exitReason(err error) string {
	if err == nil {
		return ""
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return j.redact(err.Error())
	}
	return ee.Error()
}

// round shortens a duration for a log line.
func round(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(time.Second)
}

func outcome(rec *Record) string {
	switch {
	case rec.OK() && len(rec.Outputs) > 0:
		return fmt.Sprintf("done, %d outputs", len(rec.Outputs))
	case rec.OK():
		return "done"
	}
	return "failed: " + rec.Error
}

// listErrors renders the failed shards one to a line.
func listErrors(errs []error) string {
	lines := make([]string, len(errs))
	for i, e := range errs {
		lines[i] = e.Error()
	}
	if len(errs) == 1 {
		return lines[0]
	}
	return fmt.Sprintf("%d problems:\n  %s", len(errs), strings.Join(lines, "\n  "))
}
