package serve

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// testConfig launches argv as the local replicas of endpoint "target",
// with an environment that has no CUDA_VISIBLE_DEVICES of the machine's.
func testConfig(t *testing.T, api API, o Options) Config {
	t.Helper()
	environ := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "CUDA_VISIBLE_DEVICES=") })
	return Config{Name: "target", API: api, Options: o, LogDir: t.TempDir(), Environ: environ, Logf: t.Logf}
}

// start starts a group the test stops at its end, whatever happens.
func start(t *testing.T, ctx context.Context, cfg Config) (*Group, error) {
	t.Helper()
	g, err := Start(ctx, cfg)
	if g != nil {
		t.Cleanup(func() { g.Stop() })
	}
	return g, err
}

// running reports whether pid is a live process (a zombie is not).
func running(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := bytes.LastIndexByte(stat, ')')
	return i < 0 || i+2 >= len(stat) || stat[i+2] != 'Z'
}

// gone waits a few seconds for pid to end and reports whether it did.
func gone(pid int) bool {
	for range 250 {
		if !running(pid) {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return false
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	for range 250 {
		if b, err := os.ReadFile(path); err == nil && len(b) > 0 {
			pid, err := strconv.Atoi(string(b))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("no pid in %s", path)
	return 0
}

// TestStart_Replicas: each replica gets its own port and its share of the
// devices, as {port}, {replica}, {gpus} and CUDA_VISIBLE_DEVICES, answers
// the API at its own URL, generates, and is gone after Close.
func TestStart_Replicas(t *testing.T) {
	for _, tc := range []struct {
		name     string
		api      API
		extra    []string
		opts     Options
		environ  string
		wantGPUs []string
	}{
		{name: "sglang, gpus listed", api: SGLang, opts: Options{Replicas: 2, GPUs: Devices{"0", "1", "2", "3"}}, wantGPUs: []string{"0,1", "2,3"}},
		{name: "openai, CUDA_VISIBLE_DEVICES", api: OpenAI, opts: Options{Replicas: 2}, environ: "4,5", wantGPUs: []string{"4", "5"}},
		{name: "openai without /health, one device each of three", api: OpenAI, extra: []string{"-no-health"},
			opts: Options{Replicas: 2, GPUs: Devices{"0", "1", "2"}, GPUsPerReplica: 1}, wantGPUs: []string{"0", "1"}},
		{name: "sglang, no devices", api: SGLang, opts: Options{Replicas: 2}, wantGPUs: []string{"", ""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.opts.Argv = append([]string{"fake-server", "-port", "{port}", "-replica", "{replica}"}, tc.extra...)
			if tc.wantGPUs[0] != "" {
				tc.opts.Argv = append(tc.opts.Argv, "-gpus", "{gpus}")
			}
			cfg := testConfig(t, tc.api, tc.opts)
			if tc.environ != "" {
				cfg.Environ = append(cfg.Environ, "CUDA_VISIBLE_DEVICES="+tc.environ)
			}
			g, err := start(t, context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			ports := map[string]bool{}
			for i, r := range g.Replicas() {
				u, err := url.Parse(r.URL)
				if err != nil {
					t.Fatal(err)
				}
				ports[u.Port()] = true
				if u.Hostname() != "127.0.0.1" || u.Path != tc.api.path() {
					t.Errorf("replica %d: URL %s, want http://127.0.0.1:PORT%s", i, r.URL, tc.api.path())
				}
				if got := strings.Join(r.GPUs, ","); got != tc.wantGPUs[i] {
					t.Errorf("replica %d: GPUs %q, want %q", i, got, tc.wantGPUs[i])
				}
				log, _ := os.ReadFile(r.Log)
				want := fmt.Sprintf("fake-server: replica %d, {gpus} %q, CUDA_VISIBLE_DEVICES=%s,", i, tc.wantGPUs[i], cmpOr(tc.wantGPUs[i], tc.environ))
				if !strings.Contains(string(log), want) {
					t.Errorf("replica %d: log has no %q:\n%s", i, want, log)
				}
				if err := r.Generates(context.Background(), 5*time.Second); err != nil {
					t.Errorf("replica %d: Generates: %v", i, err)
				}
				if r.ReadyAt.Before(r.StartedAt) {
					t.Errorf("replica %d: ready at %v, before its start at %v", i, r.ReadyAt, r.StartedAt)
				}
			}
			if len(ports) != 2 {
				t.Errorf("URLs %v: want two ports", g.URLs())
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			for _, r := range g.Replicas() {
				if running(r.PID) {
					t.Errorf("replica %d (pid %d) still running after Close", r.Index, r.PID)
				}
			}
		})
	}
}

// cmpOr is the devices a replica sees: its share, else what it inherits.
func cmpOr(share, inherited string) string {
	if share != "" {
		return share
	}
	return inherited
}

// TestStart_Failures: a server that exits, or never answers, fails the
// start with the reason, the tail of its log, and no process left.
func TestStart_Failures(t *testing.T) {
	for _, tc := range []struct {
		name    string
		argv    []string
		timeout string
		want    error
		// wantTail is in the error; notTail is a line too early to be.
		wantTail, notTail string
		wantMsg           string
	}{
		{name: "exits before ready", argv: []string{"-lines", "30", "-exit", "3"}, want: ErrExited,
			wantTail: "loading line 30", notTail: "loading line 10\n", wantMsg: "exit status 3"},
		{name: "never answers", argv: []string{"-lines", "2", "-load", "1h"}, timeout: "400ms", want: ErrNotReady,
			wantTail: "loading line 2", wantMsg: "not ready after 400ms"},
		{name: "answers 503 too long", argv: []string{"-starting", "1h"}, timeout: "600ms", want: ErrNotReady,
			wantTail: "serving on", wantMsg: "Service Unavailable"},
		{name: "cannot be run", argv: nil, want: exec.ErrNotFound, wantMsg: "no-such-server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			argv := append([]string{"fake-server", "-port", "{port}", "-pid-file", "{replica}.pid"}, tc.argv...)
			if tc.argv == nil {
				argv = []string{"no-such-server", "--port", "{port}"}
			}
			cfg := testConfig(t, SGLang, Options{Argv: argv, ReadyTimeout: tc.timeout})
			cfg.Dir = t.TempDir()
			g, err := start(t, context.Background(), cfg)
			if err == nil {
				t.Fatalf("started %v", g.URLs())
			}
			if !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			var se *StartError
			if !errors.As(err, &se) {
				t.Fatalf("error %T, want a *StartError", err)
			}
			msg := err.Error()
			if !strings.Contains(msg, tc.wantMsg) || !strings.Contains(msg, tc.wantTail) ||
				tc.notTail != "" && strings.Contains(msg+"\n", tc.notTail) {
				t.Errorf("error:\n%s\nwant %q and %q, without %q", msg, tc.wantMsg, tc.wantTail, tc.notTail)
			}
			if len(se.Tail) > tailLines {
				t.Errorf("%d lines of log, want at most %d", len(se.Tail), tailLines)
			}
			if tc.argv != nil {
				if pid := readPID(t, filepath.Join(cfg.Dir, "0.pid")); running(pid) {
					t.Errorf("server (pid %d) still running after a failed start", pid)
				}
			}
		})
	}
}

// TestStart_OneReplicaFails: the other replicas, loading, are stopped at
// once, and the error names only the replica that failed.
func TestStart_OneReplicaFails(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	cfg := testConfig(t, SGLang, Options{Replicas: 3, Argv: []string{"fake-server", "-port", "{port}", "-replica", "{replica}",
		"-pid-file", filepath.Join(dir, "{replica}.pid"), "-load", "500ms", "-exit-replica", "1", "-starting", "1h"}})
	began := time.Now()
	_, err := start(t, context.Background(), cfg)
	if err == nil || !errors.Is(err, ErrExited) {
		t.Fatalf("error %v, want replica 1 exited", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "target replica 1: exited before it was ready (exit status 1)") || !strings.Contains(msg, "NCCL error") {
		t.Errorf("error:\n%s\nwant replica 1's exit and its log's last lines", msg)
	}
	if took := time.Since(began); took > 20*time.Second {
		t.Errorf("start took %s, want the others stopped at the first failure", took)
	}
	for i := range 3 {
		if pid := readPID(t, filepath.Join(dir, strconv.Itoa(i)+".pid")); running(pid) {
			t.Errorf("replica %d (pid %d) still running", i, pid)
		}
	}
}

// TestStart_WaitsThroughWarmup: a server that refuses connections while
// it loads, then answers 503 while it warms up, is ready once it answers.
func TestStart_WaitsThroughWarmup(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, SGLang, Options{Argv: []string{"fake-server", "-port", "{port}", "-load", "300ms", "-starting", "500ms"}})
	g, err := start(t, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := g.Replicas()[0]
	if took := r.ReadyAt.Sub(r.StartedAt); took < 800*time.Millisecond {
		t.Errorf("ready after %s, before the server's warm-up ended", took)
	}
}

// TestStop_KillsTheGroup: what a server started goes with it, even a
// worker that ignores SIGTERM, and a server that ignores it too is killed
// after the grace period.
func TestStop_KillsTheGroup(t *testing.T) {
	for _, tc := range []struct {
		name  string
		extra []string
	}{
		{name: "server stops on SIGTERM"},
		{name: "server ignores SIGTERM", extra: []string{"-ignore-term"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			childFile := filepath.Join(t.TempDir(), "child.pid")
			argv := append([]string{"fake-server", "-port", "{port}", "-child", childFile}, tc.extra...)
			g, err := start(t, context.Background(), testConfig(t, SGLang, Options{Argv: argv, Grace: "300ms"}))
			if err != nil {
				t.Fatal(err)
			}
			child, leader := readPID(t, childFile), g.Replicas()[0].PID
			if !running(child) {
				t.Fatalf("worker %d not running", child)
			}
			began := time.Now()
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			if running(leader) || running(child) {
				t.Errorf("after Close: server %d running %v, worker %d running %v", leader, running(leader), child, running(child))
			}
			if took := time.Since(began); took > 5*time.Second {
				t.Errorf("stop took %s with a grace of 300ms", took)
			}
			select {
			case <-g.Replicas()[0].Exited():
			default:
				t.Error("Exited not closed after Stop")
			}
		})
	}
}

// TestStart_ContextEnds: when the context ends, a start under way is
// abandoned and running servers are stopped, unless kept.
func TestStart_ContextEnds(t *testing.T) {
	t.Run("while starting", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
		defer cancel()
		_, err := start(t, ctx, testConfig(t, SGLang, Options{Argv: []string{"fake-server", "-port", "{port}", "-load", "1h",
			"-pid-file", filepath.Join(dir, "pid")}}))
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("error %v, want the context's", err)
		}
		if pid := readPID(t, filepath.Join(dir, "pid")); running(pid) {
			t.Errorf("server %d still running", pid)
		}
	})
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprintf("once ready, keep %v", keep), func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			g, err := start(t, ctx, testConfig(t, SGLang, Options{Argv: []string{"fake-server", "-port", "{port}"}, Keep: keep}))
			if err != nil {
				t.Fatal(err)
			}
			cancel()
			pid := g.Replicas()[0].PID
			if keep {
				time.Sleep(300 * time.Millisecond)
				if !running(pid) {
					t.Error("a kept server stopped when the context ended")
				}
			} else if !gone(pid) {
				t.Error("server still running 5s after the context ended")
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			if keep && !running(pid) {
				t.Error("a kept server stopped at Close")
			}
		})
	}
}

// TestReplica_Exited: a server that dies once ready is noticed at once.
func TestReplica_Exited(t *testing.T) {
	t.Parallel()
	g, err := start(t, context.Background(), testConfig(t, SGLang, Options{Argv: []string{"fake-server", "-port", "{port}"}}))
	if err != nil {
		t.Fatal(err)
	}
	r := g.Replicas()[0]
	syscall.Kill(r.PID, syscall.SIGKILL)
	select {
	case <-r.Exited():
	case <-time.After(5 * time.Second):
		t.Fatal("Exited not closed 5s after the server was killed")
	}
	if err := r.ExitErr(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("ExitErr %v, want the kill", err)
	}
	if err := g.Close(); err != nil {
		t.Errorf("Close of a dead server: %v", err)
	}
}

// TestStart_NoOrphanAfterSIGKILL: a server outlives no eaglet, even one
// killed outright, unless kept.
func TestStart_NoOrphanAfterSIGKILL(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "server.pid")
	driver := exec.Command("serve-driver", pidFile)
	driver.Stderr = os.Stderr
	if err := driver.Start(); err != nil {
		t.Fatal(err)
	}
	server := readPID(t, pidFile)
	t.Cleanup(func() { syscall.Kill(-server, syscall.SIGKILL) })
	if !running(server) {
		t.Fatalf("server %d not running", server)
	}
	driver.Process.Kill()
	driver.Wait()
	if !gone(server) {
		t.Errorf("server %d still running 5s after its eaglet was killed", server)
	}
}

// TestReplica_GeneratesHung: a launched server whose health and model
// list answer while its generations hang is ready, and caught by the
// liveness probe within the time it is given.
func TestReplica_GeneratesHung(t *testing.T) {
	t.Parallel()
	g, err := start(t, context.Background(), testConfig(t, OpenAI, Options{Argv: []string{"fake-server", "-port", "{port}", "-hang"}}))
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := g.Replicas()[0].Generates(context.Background(), 500*time.Millisecond); !errors.Is(err, ErrHung) {
		t.Errorf("Generates: %v, want %v", err, ErrHung)
	}
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("Generates took %s, given 500ms", took)
	}
}
