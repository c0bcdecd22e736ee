package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "github.com/mattn/go-sqlite3"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// buildEaglet compiles the real binary once per test process.
func buildEaglet(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "eaglet-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "eaglet")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// slowSpec writes a pipeline whose generate stage takes a few seconds, so
// that a kill lands in the middle of it.
func slowSpec(t *testing.T, dir string) string {
	t.Helper()
	data, err := filepath.Abs("../../specs/examples/data")
	if err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf(`version: 1
name: kill
state: state.db
datasets:
  chat: {source: %[1]s/chat.jsonl}
  code: {source: %[1]s/code.jsonl}
endpoints:
  sim: {api: sim, concurrency: 12, options: {seed: 9, mean_tokens: 150, speed: 600}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: 60, seed: 2}}
  - {name: generate, uses: generate, needs: [cap], foreach: datasets, with: {max_tokens: 600}}
  - {name: filter, uses: filter, needs: [generate], foreach: datasets, with: {keep: "completion_tokens > 8"}}
  - {name: merge, uses: merge, needs: [filter], with: {out: train.jsonl, shuffle_seed: 1}}
`, data)
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func runBin(bin string, args ...string) (int, string) {
	cmd := exec.Command(bin, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return ee.ExitCode(), out.String()
	}
	if err != nil {
		return -1, err.Error()
	}
	return 0, out.String()
}

func TestRun_SurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	bin := buildEaglet(t)

	// The reference: one uninterrupted run.
	refDir := t.TempDir()
	if code, out := runBin(bin, "run", slowSpec(t, refDir)); code != 0 {
		t.Fatalf("reference run exited %d:\n%s", code, out)
	}
	want := mustReadFile(t, filepath.Join(refDir, "train.jsonl"))

	dir := t.TempDir()
	spec := slowSpec(t, dir)
	store := filepath.Join(dir, "state.db")
	// Each run is killed once it has committed answers of its own, a
	// little later or sooner, rather than at a time after its start that a
	// loaded machine may spend starting up.
	rng := rand.New(rand.NewPCG(1, 2))
	kills := 0
	for i := 0; i < 6 && kills < 4; i++ {
		before := 0
		if _, err := os.Stat(store); err == nil {
			before = generatedCount(t, store)
		}
		cmd := exec.Command(bin, "run", spec)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		waitCommitted(t, store, before, exited)
		time.Sleep(time.Duration(rng.IntN(200)) * time.Millisecond)
		cmd.Process.Signal(syscall.SIGKILL)
		if err := <-exited; err != nil {
			kills++
		}
	}
	if kills < 2 {
		t.Fatalf("only %d runs were killed mid-way; the test needs a slower pipeline", kills)
	}
	done := generatedCount(t, filepath.Join(dir, "state.db"))
	if done == 0 || done >= 120 {
		t.Fatalf("after %d kills %d of 120 records were generated; the kills must land mid-stage", kills, done)
	}
	// status reports the killed run's committed work.
	code, out := runBin(bin, "status", "--json", spec)
	var st struct{ Instances []instanceStatus }
	if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
		t.Fatalf("status after kills: exit %d, %v\n%s", code, err, out)
	}
	shown := 0
	for _, in := range st.Instances {
		if strings.HasPrefix(in.Instance, "generate[") {
			shown += in.Done + in.Failed
			if in.Done > 0 && in.State != "incomplete" && in.State != "done" {
				t.Errorf("%s has %d records done but state %q", in.Instance, in.Done, in.State)
			}
		}
	}
	if shown != done {
		t.Errorf("status shows %d generated records; the store holds %d", shown, done)
	}
	if code, out := runBin(bin, "run", spec); code != 0 {
		t.Fatalf("final run exited %d:\n%s", code, out)
	}
	if got := mustReadFile(t, filepath.Join(dir, "train.jsonl")); !bytes.Equal(got, want) {
		t.Errorf("output after %d kills differs from an uninterrupted run (%d vs %d bytes)", kills, len(got), len(want))
	}
	// A record processed again after its outcome was committed would have
	// been committed twice: attempts counts commits of each row.
	db, err := sql.Open("sqlite3", filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var twice int
	if err := db.QueryRow(`SELECT COUNT(*) FROM items WHERE instance LIKE 'generate[%' AND attempts > 1`).Scan(&twice); err != nil {
		t.Fatal(err)
	}
	if twice != 0 {
		t.Errorf("%d records were generated again after being committed", twice)
	}
	if code, out := runBin(bin, "run", spec); code != 0 || !strings.Contains(out, "everything is up to date") {
		t.Errorf("a run after completion should do nothing; exited %d:\n%s", code, out)
	}
}

// waitCommitted waits until the store at path holds more generated
// records than before, or the run has exited (which it sends on exited,
// put back for the caller), a minute at most.
func waitCommitted(t *testing.T, path string, before int, exited chan error) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-exited:
			exited <- err
			return
		default:
		}
		if _, err := os.Stat(path); err == nil && generatedCount(t, path) > before {
			return
		}
	}
	t.Fatalf("no answer committed within a minute of the run's start (%d before)", before)
}

func generatedCount(t *testing.T, path string) int {
	t.Helper()
	db, err := sql.Open("sqlite3", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	db.QueryRow(`SELECT COUNT(*) FROM items WHERE instance LIKE 'generate[%'`).Scan(&n)
	return n
}

func TestRun_InterruptAndLock(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and signals the real binary")
	}
	bin := buildEaglet(t)
	dir := t.TempDir()
	spec := slowSpec(t, dir)
	cmd := exec.Command(bin, "run", spec)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Well into generating: its first answers are committed. (A fixed
	// 700 ms was too short on a loaded machine.)
	store := filepath.Join(dir, "state.db")
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if _, err := os.Stat(store); err == nil && generatedCount(t, store) > 0 {
			break
		}
	}

	code, second := runBin(bin, "run", spec)
	if code == 0 || !strings.Contains(second, fmt.Sprintf("pid %d", cmd.Process.Pid)) {
		t.Errorf("a second run on the same state exited %d without naming pid %d:\n%s", code, cmd.Process.Pid, second)
	}

	cmd.Process.Signal(os.Interrupt)
	err := cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Fatalf("after Ctrl-C the run ended with %v; want exit status 130\n%s", err, out.String())
	}
	if n := generatedCount(t, filepath.Join(dir, "state.db")); n == 0 {
		t.Error("nothing was committed before exiting on Ctrl-C")
	}
	// The interrupt is a line of the log like the others, timestamped.
	if !regexp.MustCompile(`(?m)^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ eaglet: interrupted`).MatchString(out.String()) {
		t.Errorf("no timestamped interrupt line in the log:\n%s", out.String())
	}
	// Its summary says what is left: the instances the interrupt kept
	// from their end (merge, at least, has not run).
	if !regexp.MustCompile(`left to do:\n.*instances? not up to date \(.*merge (waiting|not run).*\); `+"`eaglet run "+regexp.QuoteMeta(spec)+"` continues").MatchString(out.String()) ||
		strings.Contains(out.String(), "nothing left to do") {
		t.Errorf("the interrupted run's summary does not say what is left:\n%s", out.String())
	}
	// The generate instances Ctrl-C stopped are incomplete once the run
	// is over, in its table and in what is left: the run still holds the
	// lock while it summarizes, but nothing works on them any more.
	if !regexp.MustCompile(`(?m)^ +generate\[(chat|code)\] +incomplete `).MatchString(out.String()) ||
		!regexp.MustCompile(`generate\[(chat|code)\] incomplete`).MatchString(out.String()) ||
		regexp.MustCompile(`(?m)^ +\S+ +running `).MatchString(out.String()) {
		t.Errorf("the interrupted run's table and summary should show its stopped instances incomplete, none running:\n%s", out.String())
	}
	if code, text := runBin(bin, "run", spec); code != 0 || !strings.Contains(text, "nothing left to do") {
		t.Fatalf("the run after Ctrl-C exited %d:\n%s", code, text)
	}
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
