package serve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// schedulerConfig is testConfig with a directory for the fake scheduler's
// jobs, whose processes the test kills at its end whatever happens.
func schedulerConfig(t *testing.T, api API, o Options) (Config, string) {
	t.Helper()
	jobs := t.TempDir()
	t.Cleanup(func() {
		pids, _ := filepath.Glob(filepath.Join(jobs, "*.pid"))
		for _, p := range pids {
			if b, err := os.ReadFile(p); err == nil {
				if pid, err := strconv.Atoi(string(b)); err == nil {
					syscall.Kill(-pid, syscall.SIGKILL)
				}
			}
		}
	})
	cfg := testConfig(t, api, o)
	cfg.Environ = append(cfg.Environ, "FAKE_JOBS="+jobs)
	return cfg, jobs
}

// jobPID is the process of a fake scheduler's job, 0 once it is cancelled.
func jobPID(jobs, id string) int {
	b, err := os.ReadFile(filepath.Join(jobs, id+".pid"))
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(string(b))
	return pid
}

// TestStart_Schedulers: each scheduler's submit starts a job, its id is
// found in the submit's output by the scheduler's default pattern, the
// address the job writes is where it is probed, and the default stop
// command cancels it. The submit and the stop are recognized from argv[0].
func TestStart_Schedulers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		api    API
		argv   []string
		jobID  string // pattern of the ids
		prefix string // of the job's file names in the fake's directory
	}{
		{name: Slurm, api: SGLang, jobID: `^\d+$`, prefix: "slurm-",
			argv: []string{"sbatch", "--job-name", "eaglet-{replica}", "--wrap", "fake-server -address-file {address_file} -replica {replica}"}},
		{name: Kubernetes, api: SGLang, jobID: `^eaglet-target-[01]$`,
			argv: []string{"kubectl", "create", "job", "eaglet-target-{replica}", "--image=lmsysorg/sglang:latest", "--",
				"fake-server", "-address-file", "{address_file}", "-address-url", "-replica", "{replica}"}},
		{name: Ray, api: OpenAI, jobID: `^raysubmit_\w+$`,
			argv: []string{"ray", "job", "submit", "--no-wait", "--", "fake-server", "-address-file", "{address_file}", "-replica", "{replica}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, jobs := schedulerConfig(t, tc.api, Options{Argv: tc.argv, Replicas: 2})
			g, err := start(t, context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			pids := map[int]bool{}
			for i, r := range g.Replicas() {
				if !regexp.MustCompile(tc.jobID).MatchString(r.JobID) {
					t.Errorf("replica %d: job id %q, want %s", i, r.JobID, tc.jobID)
				}
				pid := jobPID(jobs, tc.prefix+r.JobID)
				if pid == 0 || !running(pid) {
					t.Fatalf("replica %d: job %s has no running process", i, r.JobID)
				}
				pids[pid] = true
				if !strings.HasPrefix(r.URL, "http://127.0.0.1:") || !strings.HasSuffix(r.URL, tc.api.path()) {
					t.Errorf("replica %d: URL %q", i, r.URL)
				}
				if err := r.Generates(context.Background(), 5*time.Second); err != nil {
					t.Errorf("replica %d: Generates: %v", i, err)
				}
				out, _ := os.ReadFile(filepath.Join(jobs, tc.prefix+r.JobID+".out"))
				if want := "replica " + strconv.Itoa(i) + ","; !strings.Contains(string(out), want) {
					t.Errorf("replica %d: job output has no %q:\n%s", i, want, out)
				}
			}
			if len(pids) != 2 || g.URLs()[0] == g.URLs()[1] {
				t.Errorf("replicas share a job or an address: %v", g.URLs())
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			for pid := range pids {
				if !gone(pid) {
					t.Errorf("job process %d still running after Close", pid)
				}
			}
			for _, r := range g.Replicas() {
				if _, err := os.Stat(r.addressFile); !os.IsNotExist(err) {
					t.Errorf("replica %d: address file %s left behind", r.Index, r.addressFile)
				}
				log, _ := os.ReadFile(r.Log)
				if !strings.Contains(string(log), "=== eaglet: stopping job "+r.JobID) {
					t.Errorf("replica %d: log has no stop:\n%s", r.Index, log)
				}
			}
		})
	}
}

// TestStart_SchedulerAddress: a job that does not write its address is
// found where the address option says, as a Kubernetes Service names it.
func TestStart_SchedulerAddress(t *testing.T) {
	t.Parallel()
	ports, err := freePorts(1)
	if err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(ports[0])
	cfg, _ := schedulerConfig(t, OpenAI, Options{
		Argv:    []string{"kubectl", "create", "job", "eaglet-{replica}", "--image=vllm/vllm-openai", "--", "fake-server", "-port", port},
		Address: "http://127.0.0.1:" + port + "/v1",
	})
	g, err := start(t, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r := g.Replicas()[0]; r.URL != cfg.Options.Address || r.JobID != "eaglet-0" {
		t.Errorf("URL %q, job %q; want %q, eaglet-0", r.URL, r.JobID, cfg.Options.Address)
	}
}

// TestStart_SchedulerFailures: a refused submit, a submit whose output has
// no job id and a job that never reports an address each fail the start
// with the reason and the log lines that explain it.
func TestStart_SchedulerFailures(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
		// jobLog names the job's own log (the log option) when set.
		jobLog        bool
		want          error
		wantMsg, tail string
	}{
		{name: "submit refused", opts: Options{Argv: []string{"sbatch", "--fail", "--wrap", "fake-server"}},
			wantMsg: "submit sbatch: exit status 1", tail: "Invalid account"},
		{name: "no job id", opts: Options{Argv: []string{"sbatch", "--wrap", "fake-server -address-file {address_file}"}, JobID: `queued as (\d+)`},
			wantMsg: `no job id matching "queued as (\\d+)"`, tail: "Submitted batch job"},
		{name: "job dies", opts: Options{Argv: []string{"sbatch", "--wrap", "fake-server -lines 30 -exit 2"}, ReadyTimeout: "1s"},
			jobLog: true, want: ErrNotReady, wantMsg: "has not written its address", tail: "CUDA out of memory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, jobs := schedulerConfig(t, SGLang, tc.opts)
			if tc.jobLog {
				cfg.Options.Log = filepath.Join(jobs, "slurm-{job_id}.out")
			}
			_, err := start(t, context.Background(), cfg)
			if err == nil {
				t.Fatal("started")
			}
			var se *StartError
			if !errors.As(err, &se) || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("error %v (%T), want a *StartError for %v", err, err, tc.want)
			}
			if msg := err.Error(); !strings.Contains(msg, tc.wantMsg) || !strings.Contains(msg, tc.tail) {
				t.Errorf("error:\n%s\nwant %q and the log's %q", msg, tc.wantMsg, tc.tail)
			}
			if tc.jobLog && !strings.HasSuffix(se.Log, ".out") {
				t.Errorf("tail of %s, want the job's own log", se.Log)
			}
		})
	}
}
