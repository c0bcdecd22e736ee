package serve

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRestart_ReplacesAReplica: a replica whose server was killed is
// replaced by one on a port of its own, with the same devices, answering
// at the URL the group then gives; the other replica is untouched, and
// Stop stops the new one.
func TestRestart_ReplacesAReplica(t *testing.T) {
	t.Parallel()
	g, err := start(t, context.Background(), testConfig(t, SGLang, Options{Replicas: 2, GPUs: Devices{"0", "1"},
		Argv: []string{"fake-server", "-port", "{port}", "-replica", "{replica}"}}))
	if err != nil {
		t.Fatal(err)
	}
	before := g.Replicas()
	syscall.Kill(before[1].PID, syscall.SIGKILL)
	<-before[1].Exited()
	r, err := g.Restart(context.Background(), 1)
	if err != nil {
		t.Fatal(err)
	}
	after := g.Replicas()
	if after[1] != r || after[0] != before[0] {
		t.Fatalf("replicas after the restart: %v, want replica 0 kept and 1 the new one", g.URLs())
	}
	if r.URL == before[1].URL || r.PID == before[1].PID || !slices.Equal(r.GPUs, before[1].GPUs) {
		t.Errorf("new replica at %s (pid %d, devices %v); the old was at %s (pid %d, devices %v)", r.URL, r.PID, r.GPUs, before[1].URL, before[1].PID, before[1].GPUs)
	}
	if err := r.Generates(context.Background(), 10*time.Second); err != nil {
		t.Errorf("new replica: %v", err)
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	for _, r := range g.Replicas() {
		if !gone(r.PID) {
			t.Errorf("replica %d (pid %d) still running after Stop", r.Index, r.PID)
		}
	}
}

// TestRestart_StoppedMeanwhile: a Stop while the new server loads cuts
// the restart short and leaves nothing running.
func TestRestart_StoppedMeanwhile(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, SGLang, Options{Argv: []string{"fake-server", "-port", "{port}", "-pid-file", "{replica}.pid"}})
	cfg.Dir = t.TempDir()
	g, err := start(t, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	first := g.Replicas()[0].PID
	g.s.Argv = append(g.s.Argv, "-starting", "1h") // the restart's server never becomes ready
	done := make(chan error, 1)
	go func() {
		_, err := g.Restart(context.Background(), 0)
		done <- err
	}()
	pid := 0
	for range 250 {
		if pid = readPID(t, filepath.Join(cfg.Dir, "0.pid")); pid != first {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := g.Stop(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrStopped) {
		t.Errorf("restart: %v, want ErrStopped", err)
	}
	if pid == first || !gone(pid) {
		t.Errorf("the restart's server (pid %d) still running after Stop", pid)
	}
	if _, err := g.Restart(context.Background(), 0); !errors.Is(err, ErrStopped) {
		t.Errorf("restart after Stop: %v, want ErrStopped", err)
	}
}

// TestStart_RedactsTheCommandLine: the command line eaglet writes into a
// replica's log has the secrets Redact scrubs scrubbed.
func TestStart_RedactsTheCommandLine(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, SGLang, Options{Argv: []string{"fake-server", "-port", "{port}", "-gpus", "hf_s3cr3t"}})
	cfg.Redact = func(s string) string { return strings.ReplaceAll(s, "hf_s3cr3t", "***") }
	g, err := start(t, context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(g.Replicas()[0].Log)
	if err != nil {
		t.Fatal(err)
	}
	if head, _, _ := strings.Cut(string(b), "\n"); strings.Contains(head, "hf_s3cr3t") || !strings.Contains(head, "-gpus ***") {
		t.Errorf("log's first line %q, want the secret scrubbed", head)
	}
}
