package managed

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
)

// TestMain makes the test binary its own server: run as `serve-sim PORT`
// it serves the sim model on that port until killed.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == "serve-sim" {
		os.Exit(serveSim(os.Args[2]))
	}
	os.Exit(m.Run())
}

func serveSim(port string) int {
	s, err := server.New(server.Config{Name: "sim", Model: sim.New(sim.Config{Seed: 1, MeanTokens: 20})})
	if err != nil {
		return 1
	}
	ln, err := net.Listen("tcp", "127.0.0.1:"+port)
	if err != nil {
		return 1
	}
	http.Serve(ln, s)
	return 0
}

// rotation records what a group does to the URLs in rotation.
type rotation struct {
	mu     sync.Mutex
	events []string
}

func (r *rotation) Replace(old, url string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "replace "+old+" "+url)
	return true
}

func (r *rotation) TakeOut(url, cause string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, "out "+url)
}

// wait waits for the event, failing the test after a while.
func (r *rotation) wait(t *testing.T, event string) {
	t.Helper()
	for range 500 {
		r.mu.Lock()
		found := slices.Contains(r.events, event)
		r.mu.Unlock()
		if found {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	t.Fatalf("no %q among:\n  %s", event, strings.Join(r.events, "\n  "))
}

// newGroup is a launched endpoint of two replicas of the test binary's
// server, with more launch options, logging to the test.
func newGroup(t *testing.T, more string) (*Group, *rotation, *syncLog) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	s, err := parse(fmt.Sprintf(`  target:
    api: openai
    model: sim
    launch: {argv: [%q, serve-sim, "{port}"], replicas: 2, grace: 1s%s}
`, exe, more), nil)
	if err != nil {
		t.Fatal(err)
	}
	s.State = filepath.Join(dir, "state.db")
	log := &syncLog{}
	g, err := New(s, s.Endpoint("target"), log.logf)
	if err != nil {
		t.Fatal(err)
	}
	rot := &rotation{}
	g.Rotation = rot
	t.Cleanup(func() { g.Close() })
	return g, rot, log
}

type syncLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *syncLog) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, fmt.Sprintf(format, args...))
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(l.lines, "\n")
}

// TestGroup_RestartsAnExitedReplica: a replica whose server exits is taken
// out of rotation and restarted, its new URL swapped in for its old; once
// its restarts are spent it is given up, and with every replica given up
// the endpoint is down. Close stops what is left.
func TestGroup_RestartsAnExitedReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a restart's backoff")
	}
	g, rot, log := newGroup(t, ", restarts: 1")
	stand := g.URLs()
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	urls := g.URLs()
	for i := range urls {
		rot.wait(t, "replace "+stand[i]+" "+urls[i])
	}
	syscall.Kill(g.sg.Replicas()[1].PID, syscall.SIGKILL)
	rot.wait(t, "out "+urls[1])
	for range 250 {
		if g.URLs()[1] != urls[1] {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	restarted := g.URLs()[1]
	rot.wait(t, "replace "+urls[1]+" "+restarted)
	if !strings.Contains(log.String(), "target replica 1: restarted, ready in") {
		t.Errorf("log:\n%s", log)
	}

	// The restart spent, the next exit is final.
	syscall.Kill(g.sg.Replicas()[1].PID, syscall.SIGKILL)
	for i := 0; !strings.Contains(log.String(), "target replica 1 is not restarted: launch.restarts (1) spent"); i++ {
		if i == 250 {
			t.Fatalf("replica 1 was not given up:\n%s", log)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "target: stopped; 2 replicas up") || !strings.Contains(log.String(), ", 1 restart") {
		t.Errorf("no summary of the replicas' uptime and restarts in:\n%s", log)
	}
	f := g.Figures()
	if len(f.Replicas) != 2 || f.Replicas[0].State != ReplicaStopped || f.Replicas[1].State != ReplicaLost ||
		f.Replicas[0].Restarts != 0 || f.Replicas[1].Restarts != 1 {
		t.Errorf("figures %+v, want replica 0 stopped, replica 1 lost after 1 restart", f)
	}
	if up := f.Replicas[0].UptimeSeconds; up <= 0 || f.GPUHours <= 0 {
		t.Errorf("figures %+v: no uptime or GPU-hours", f)
	}
	if again := g.Figures(); again.Replicas[0].UptimeSeconds != f.Replicas[0].UptimeSeconds {
		t.Errorf("uptime grows after Close: %v, then %v", f.Replicas[0].UptimeSeconds, again.Replicas[0].UptimeSeconds)
	}
}

// TestGroup_Down: once every replica exited with its restarts spent, the
// endpoint hears it can serve nothing more.
func TestGroup_Down(t *testing.T) {
	g, _, log := newGroup(t, ", restarts: 0")
	if testing.Short() {
		t.Skip("launches servers")
	}
	down := make(chan error, 1)
	g.Down = func(err error) { down <- err }
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, r := range g.sg.Replicas() {
		syscall.Kill(r.PID, syscall.SIGKILL)
	}
	select {
	case err := <-down:
		if !strings.Contains(err.Error(), "every replica of target exited") {
			t.Errorf("down: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("the endpoint is not down with its restarts spent:\n%s", log)
	}
}

// TestGroup_Restart: the watchdog's seam restarts the replica at a URL
// as an exit does, saying why; a URL of no replica is refused.
func TestGroup_Restart(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a restart's backoff")
	}
	g, rot, log := newGroup(t, "")
	if g.Restart("http://127.0.0.1:1/v1", "hung") {
		t.Error("Restart before the start found a replica")
	}
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	urls := g.URLs()
	if g.Restart("http://127.0.0.1:1/v1", "hung") || !g.Restart(urls[0], "no token in 30s while the others generate") {
		t.Fatal("Restart found the wrong replicas")
	}
	rot.wait(t, "out "+urls[0])
	for range 250 {
		if g.URLs()[0] != urls[0] {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	rot.wait(t, "replace "+urls[0]+" "+g.URLs()[0])
	if !strings.Contains(log.String(), "target replica 0 at "+urls[0]+": no token in 30s while the others generate") {
		t.Errorf("log does not say why:\n%s", log)
	}
}

// TestGroup_CloseBeforeStart: a group never started closes at once, and
// one closed starts again.
func TestGroup_CloseBeforeStart(t *testing.T) {
	g, _, _ := newGroup(t, "")
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		return
	}
	for range 2 {
		if err := g.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		pids := []int{g.sg.Replicas()[0].PID, g.sg.Replicas()[1].PID}
		if err := g.Close(); err != nil {
			t.Fatal(err)
		}
		for _, pid := range pids {
			if syscall.Kill(pid, 0) == nil {
				if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); !strings.Contains(string(b), ") Z ") {
					t.Errorf("server %d still running after Close", pid)
				}
			}
		}
	}
}
