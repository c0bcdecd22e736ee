package launch

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/state"
)

// The fake extraction command is this test binary run again with
// helperEnv set (os/exec's TestHelperProcess pattern). It reads its shard,
// writes an output named by index and version, and is steered per shard
// index by env: FAKE_FAIL and FAKE_NOOUT (lists of indexes: exit 3, or
// exit 0 writing nothing), FAKE_AWAIT ("0=started-1,*=release": wait
// until that file is in the output directory, a minute at most, so a test
// says when a command ends instead of guessing a sleep), FAKE_SLEEP
// ("2=60s,*=100ms", after FAKE_AWAIT), FAKE_IGNORE_TERM (indexes that
// ignore SIGTERM) and FAKE_WORKER (indexes that start a worker, as
// torchrun does, which sleeps a minute and which the command leaves
// behind when it ends).
const (
	helperEnv = "EAGLET_LAUNCH_HELPER"
	driverEnv = "EAGLET_LAUNCH_DRIVER"
)

func TestHelperProcess(t *testing.T) {
	if os.Getenv(helperEnv) != "1" {
		t.Skip("the fake extraction command, run by the other tests")
	}
	args := os.Args
	if i := slices.Index(args, "--"); i >= 0 {
		args = args[i+1:]
	}
	os.Exit(fakeExtract(args))
}

func fakeExtract(args []string) int {
	fs := flag.NewFlagSet("extract", flag.ContinueOnError)
	shard := fs.String("shard", "", "shard file")
	index := fs.Int("index", -1, "shard index")
	count := fs.Int("count", 0, "shard count")
	out := fs.String("out", "", "output directory")
	version := fs.String("version", "", "shard version")
	fs.String("marker", "", "a token the tests find this process by in /proc")
	fs.String("token", "", "a secret the tests keep out of logs and the store")
	worker := fs.Bool("worker", false, "be a worker: sleep a minute")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *worker {
		time.Sleep(time.Minute)
		return 0
	}
	start := time.Now()
	in := func(list string) bool {
		return slices.Contains(strings.Split(os.Getenv(list), ","), strconv.Itoa(*index))
	}
	term := make(chan os.Signal, 1)
	if in("FAKE_IGNORE_TERM") {
		signal.Ignore(syscall.SIGTERM)
	} else {
		signal.Notify(term, syscall.SIGTERM)
	}
	appendLine(filepath.Join(*out, fmt.Sprintf("calls-%d", *index)), *version)
	if in("FAKE_WORKER") {
		w := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "--", "-worker", "-marker", fs.Lookup("marker").Value.String())
		if err := w.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		appendLine(filepath.Join(*out, fmt.Sprintf("worker-%d", *index)), strconv.Itoa(w.Process.Pid))
	}
	appendLine(filepath.Join(*out, fmt.Sprintf("started-%d", *index)), strconv.Itoa(os.Getpid()))
	fmt.Printf("shard %d of %d: %s\n", *index, *count, *shard)
	data, err := os.ReadFile(*shard)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if name := forIndex("FAKE_AWAIT", *index); name != "" && !await(filepath.Join(*out, name), term) {
		fmt.Println("got SIGTERM")
		return 143
	}
	d, _ := time.ParseDuration(forIndex("FAKE_SLEEP", *index))
	select {
	case <-time.After(d):
	case <-term:
		fmt.Println("got SIGTERM")
		return 143
	}
	appendLine(filepath.Join(*out, "times"), fmt.Sprintf("%d %d", start.UnixNano(), time.Now().UnixNano()))
	switch {
	case in("FAKE_FAIL"):
		fmt.Fprintln(os.Stderr, "told to fail")
		return 3
	case in("FAKE_NOOUT"):
		return 0
	}
	lines := bytes.Count(data, []byte("\n"))
	name := filepath.Join(*out, fmt.Sprintf("hs_%d_%s.txt", *index, *version))
	if err := os.WriteFile(name, []byte(fmt.Sprintf("%d lines\n", lines)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// forIndex is the value an env list ("2=60s,*=100ms") gives shard index:
// its own, else the one for every shard, else "".
func forIndex(env string, index int) string {
	v := ""
	for _, part := range strings.Split(os.Getenv(env), ",") {
		k, val, ok := strings.Cut(part, "=")
		switch {
		case !ok:
		case k == strconv.Itoa(index):
			return val
		case k == "*":
			v = val
		}
	}
	return v
}

// await waits until path exists, or a minute at most, and is false when
// SIGTERM comes first.
func await(path string, term <-chan os.Signal) bool {
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if _, err := os.Stat(path); err == nil {
			return true
		}
		select {
		case <-tick.C:
		case <-term:
			return false
		}
	}
	return true
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		panic(err)
	}
	defer f.Close()
	fmt.Fprintln(f, line)
}

// fixture is a directory with n shards, a store and a job launching the
// fake extraction command on them.
type fixture struct {
	dir    string
	marker string
	store  *state.Store
	job    *Job
}

func newFixture(t *testing.T, n int, env map[string]string) *fixture {
	t.Helper()
	dir := t.TempDir()
	f := &fixture{dir: dir, marker: fmt.Sprintf("eaglet-launch-test-%d-%d", os.Getpid(), time.Now().UnixNano())}
	for _, d := range []string{"shards", "out"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	var shards []Shard
	for i := range n {
		shards = append(shards, f.writeShard(t, i, "v1"))
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	fullEnv := map[string]string{helperEnv: "1"}
	for k, v := range env {
		fullEnv[k] = v
	}
	f.job = &Job{
		Instance: "handoff",
		Options: &Options{
			Argv: []string{exe, "-test.run=^TestHelperProcess$", "--", "-shard", "{shard}", "-index", "{index}",
				"-count", "{count}", "-out", "{out}", "-version", "{version}", "-marker", f.marker},
			Outputs: "out/hs_{index}_{version}.txt",
			Env:     fullEnv,
		},
		Shards:   shards,
		Out:      filepath.Join(dir, "out"),
		Manifest: filepath.Join(dir, "manifest.json"),
		LogDir:   filepath.Join(dir, "logs"),
		Dir:      dir,
		Log:      t.Logf,
	}
	f.store = f.openStore(t)
	return f
}

// cp is the job's instance's checkpoints in the fixture's store.
func (f *fixture) cp() *state.Checkpoints { return f.store.Checkpoints(f.job.Instance) }

func (f *fixture) openStore(t *testing.T) *state.Store {
	s, err := state.Open(filepath.Join(f.dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// writeShard writes shard i of version v, with i+1 lines.
func (f *fixture) writeShard(t *testing.T, i int, v string) Shard {
	t.Helper()
	path := filepath.Join(f.dir, "shards", fmt.Sprintf("%s-%d.jsonl", v, i))
	if err := os.WriteFile(path, bytes.Repeat([]byte("{}\n"), i+1), 0o644); err != nil {
		t.Fatal(err)
	}
	return Shard{Index: i, Path: path, Version: fmt.Sprintf("%s-%d", v, i), Tokens: int64(100 * (i + 1))}
}

// calls returns how many times each shard's command ran.
func (f *fixture) calls(t *testing.T) []int {
	t.Helper()
	out := make([]int, len(f.job.Shards))
	for i := range out {
		b, err := os.ReadFile(filepath.Join(f.dir, "out", fmt.Sprintf("calls-%d", i)))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		out[i] = bytes.Count(b, []byte("\n"))
	}
	return out
}

// due returns the indexes Plan would launch.
func (f *fixture) due(t *testing.T) []int {
	t.Helper()
	plan, err := Plan(f.cp(), f.job)
	if err != nil {
		t.Fatal(err)
	}
	var due []int
	for _, st := range plan {
		if st.Launch {
			due = append(due, st.Shard.Index)
		}
	}
	return due
}

// waitStarted waits until the commands of the given shards have started.
func (f *fixture) waitStarted(t *testing.T, shards ...int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, i := range shards {
		for {
			if _, err := os.Stat(filepath.Join(f.dir, "out", fmt.Sprintf("started-%d", i))); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("shard %d never started", i)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// alive returns the pids of processes whose command line holds marker.
func alive(t *testing.T, marker string) []int {
	t.Helper()
	dirs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || !bytes.Contains(b, []byte(marker)) {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		if pid != os.Getpid() {
			pids = append(pids, pid)
		}
	}
	return pids
}

// driverJob is what the driver process is told to launch.
type driverJob struct {
	Store    string
	Instance string
	Options  *Options
	Shards   []Shard
	Out      string
	LogDir   string
	Dir      string
}

// TestDriverProcess is not a test: it is an eaglet stand-in (this test
// binary run again with driverEnv naming a job file) that launches the
// job's shards, for a test to kill with SIGKILL.
func TestDriverProcess(t *testing.T) {
	path := os.Getenv(driverEnv)
	if path == "" {
		t.Skip("the eaglet stand-in, run by TestRun_ParentKilled")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var dj driverJob
	if err := json.Unmarshal(b, &dj); err != nil {
		t.Fatal(err)
	}
	s, err := state.Open(dj.Store)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	job := &Job{Instance: dj.Instance, Options: dj.Options, Shards: dj.Shards, Out: dj.Out, LogDir: dj.LogDir, Dir: dj.Dir}
	if _, err := Run(context.Background(), s.Checkpoints(dj.Instance), job); err != nil {
		t.Fatal(err)
	}
}

// readTimes returns the [start, end] intervals the commands ran.
func readTimes(t *testing.T, path string) [][2]int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out [][2]int64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var iv [2]int64
		if _, err := fmt.Sscanf(sc.Text(), "%d %d", &iv[0], &iv[1]); err != nil {
			t.Fatal(err)
		}
		out = append(out, iv)
	}
	return out
}

// maxOverlap is the most intervals that were open at one instant.
func maxOverlap(ivs [][2]int64) int {
	best := 0
	for _, a := range ivs {
		n := 0
		for _, b := range ivs {
			if b[0] <= a[0] && a[0] < b[1] {
				n++
			}
		}
		best = max(best, n)
	}
	return best
}
