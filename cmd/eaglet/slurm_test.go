package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// slurmSpec writes a pipeline whose endpoint's two replicas are jobs of
// the fake Slurm in testdata/fake-slurm, each serving `eaglet sim-server`
// decoding at speed tokens/s (0: at once); its cluster is dir/slurm.
func slurmSpec(t *testing.T, bin string, speed int) (dir, spec string) {
	t.Helper()
	dir = t.TempDir()
	chatPrompts(t, dir, launchedRecords, "chat.jsonl")
	fake, err := filepath.Abs("testdata/fake-slurm")
	if err != nil {
		t.Fatal(err)
	}
	spec = writeLaunchedSpec(t, dir, "slurm", fmt.Sprintf(`
      scheduler: slurm
      argv: [%[1]q, --time=1:00:00, %[2]q, "{address_file}", %[3]q, -speed, "%[4]d"]
      stop: [%[5]q, "{job_id}"]
      log: slurm/slurm-{job_id}.out
      replicas: 2
      ready_timeout: 20s`, filepath.Join(fake, "sbatch"), filepath.Join(fake, "sim-job.sh"), bin, speed, filepath.Join(fake, "scancel")))
	t.Setenv("FAKE_SLURM_DIR", filepath.Join(dir, "slurm"))
	return dir, spec
}

// slurmJobs are the fake cluster's jobs ever submitted, by id: the
// leaders of their process groups.
func slurmJobs(dir string) map[string]int {
	jobs := map[string]int{}
	for _, line := range strings.Split(strings.TrimSpace(readFile(filepath.Join(dir, "slurm", "jobs"))), "\n") {
		if id, pid, ok := strings.Cut(line, " "); ok {
			jobs[id], _ = strconv.Atoi(pid)
		}
	}
	return jobs
}

// noJobLeft fails the test for every job of dir's cluster still running
// a few seconds on, and kills it.
func noJobLeft(t *testing.T, dir string) {
	t.Helper()
	for id, pid := range slurmJobs(dir) {
		if !groupGone(pid) {
			t.Errorf("job %s (process group %d) still running", id, pid)
			syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
}

// groupGone waits up to 5 s for process group pgid to have no live
// process; zombies count as gone, as no init may reap them here.
func groupGone(pgid int) bool {
	for range 250 {
		if !groupLive(pgid) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

// groupLive reports whether /proc lists a live process of group pgid.
func groupLive(pgid int) bool {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		stat := readFile(p)
		// After the command name in parentheses: state, ppid, pgrp.
		if f := strings.Fields(stat[strings.LastIndexByte(stat, ')')+1:]); len(f) >= 3 && f[0] != "Z" && f[2] == strconv.Itoa(pgid) {
			return true
		}
	}
	return false
}

// TestRun_LaunchedSlurmJob launches the endpoint's replicas as jobs of a
// fake Slurm (shell scripts for sbatch and scancel): the run submits one
// job per replica, finds each one's address in its {address_file},
// finishes, and cancels both. After eaglet is killed with SIGKILL the jobs
// are still up and recorded: `eaglet servers` lists them, and the rerun
// adopts them (no second submit) and cancels them at its end; `eaglet
// servers --stop` cancels what a killed run left.
func TestRun_LaunchedSlurmJob(t *testing.T) {
	if testing.Short() {
		t.Skip("builds eaglet and submits its sim-server to a fake Slurm")
	}
	bin := buildEaglet(t)

	dir, spec := slurmSpec(t, bin, 0)
	code, out := runBin(bin, "run", "--progress", "lines", spec)
	if code != 0 {
		t.Fatalf("run exited %d:\n%s", code, out)
	}
	want := must(os.ReadFile(filepath.Join(dir, "train.jsonl")))
	if n := bytes.Count(want, []byte("\n")); n != launchedRecords {
		t.Fatalf("train.jsonl has %d records, want %d", n, launchedRecords)
	}
	if len(slurmJobs(dir)) != 2 || !strings.Contains(out, "target replica 1: submitted slurm job") ||
		!strings.Contains(out, "target: stopped; 2 replicas up") {
		t.Errorf("the run did not submit two jobs and cancel them:\n%s", out)
	}
	noJobLeft(t, dir)
	if code, out := runBin(bin, "servers", spec); code != 0 || !strings.Contains(out, "no servers up") {
		t.Errorf("servers after a run that ended (exit %d) lists some:\n%s", code, out)
	}

	// killed runs a slow run until it has sent some requests, and kills
	// eaglet with SIGKILL.
	killed := func(t *testing.T) (dir, spec string) {
		dir, spec = slurmSpec(t, bin, 50)
		cmd, log := startBin(t, bin, filepath.Join(dir, "run.log"), "run", "--progress", "lines", spec)
		t.Cleanup(func() { noJobLeft(t, dir) })
		until(func() bool { return strings.Contains(log(), "2 replicas ready") })
		// About a second's answers of the run's six.
		time.Sleep(time.Second)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
		if len(slurmJobs(dir)) != 2 {
			t.Fatalf("the jobs were not submitted before eaglet was killed:\n%s", log())
		}
		for id, pid := range slurmJobs(dir) {
			if !groupLive(pid) {
				t.Fatalf("job %s ended with eaglet", id)
			}
		}
		return dir, spec
	}

	t.Run("adopted", func(t *testing.T) {
		dir, spec := killed(t)
		code, out := runBin(bin, "servers", spec)
		if code != 0 || strings.Count(out, "job ") != 2 || strings.Count(out, "  yes  ") != 2 {
			t.Errorf("servers (exit %d) does not list both jobs answering:\n%s", code, out)
		}
		code, out = runBin(bin, "run", "--progress", "lines", spec)
		if code != 0 {
			t.Fatalf("the rerun exited %d:\n%s", code, out)
		}
		if len(slurmJobs(dir)) != 2 || strings.Count(out, "left by an earlier run, answering at") != 2 {
			t.Errorf("the rerun submitted %d jobs in all, want the 2 it adopts:\n%s", len(slurmJobs(dir)), out)
		}
		if got := must(os.ReadFile(filepath.Join(dir, "train.jsonl"))); !bytes.Equal(got, want) {
			t.Errorf("train.jsonl after the rerun differs from the undisturbed run's")
		}
		noJobLeft(t, dir)
	})

	t.Run("stopped", func(t *testing.T) {
		dir, spec := killed(t)
		code, out := runBin(bin, "servers", "--stop", spec)
		if code != 0 || strings.Count(out, "stopped target replica") != 2 {
			t.Errorf("servers --stop (exit %d) did not stop both jobs:\n%s", code, out)
		}
		noJobLeft(t, dir)
		if code, out := runBin(bin, "servers", spec); code != 0 || !strings.Contains(out, "no servers up") {
			t.Errorf("servers after --stop (exit %d) lists some:\n%s", code, out)
		}
	})
}
