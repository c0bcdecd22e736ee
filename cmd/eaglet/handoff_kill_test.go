package main

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestFakeExtract is not a test: run by the handoff's `run:` with
// EAGLET_FAKE_EXTRACT set, it stands in for hidden-state extraction. It
// notes its launch and pid, reads its shard, sleeps as told for its index,
// then writes its output with the shard's row count.
func TestFakeExtract(t *testing.T) {
	dir := os.Getenv("EAGLET_FAKE_EXTRACT")
	if dir == "" {
		t.Skip("a helper process for TestHandoff_KilledWhileExtracting")
	}
	args := os.Args[len(os.Args)-3:] // shard, index, output
	shard, index, output := args[0], args[1], args[2]
	appendLine(filepath.Join(dir, "launches-"+index), strconv.Itoa(os.Getpid()))
	f, err := os.Open(shard)
	if err != nil {
		os.Exit(3)
	}
	rows := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<26)
	for sc.Scan() {
		rows++
	}
	f.Close()
	if s := os.Getenv("EAGLET_FAKE_SLEEP_" + index); s != "" {
		d, _ := time.ParseDuration(s)
		time.Sleep(d)
	}
	if err := os.WriteFile(output, []byte(strconv.Itoa(rows)+"\n"), 0o644); err != nil {
		os.Exit(4)
	}
	os.Exit(0)
}

func appendLine(path, line string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	fmt.Fprintln(f, line)
	f.Close()
}

// handoffSpec hands the quickstart's chat prompts, answered by the sim, to
// a fake extraction per shard (this test binary).
func handoffSpec(t *testing.T, dir string, maxSamples int) string {
	t.Helper()
	data, tok := handoffInputs(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	spec := fmt.Sprintf(`version: 1
name: extract
state: state.db
datasets: {chat: {source: %s/chat.jsonl}}
endpoints: {sim: {api: sim, options: {seed: 4, mean_tokens: 60}}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: %d, seed: 1}}
  - {name: generate, uses: generate, needs: [cap], foreach: datasets, with: {max_tokens: 200}}
  - name: handoff
    uses: handoff
    needs: [generate]
    with:
      out: out
      shards: 4
      tokenizer: %s
      run:
        argv: [%s, -test.run=^TestFakeExtract$, --, "{shard}", "{index}", "{out}/hs-{index}.txt"]
        outputs: "{out}/hs-{index}.txt"
        concurrency: 2
        env: {EAGLET_FAKE_EXTRACT: %s}
`, data, maxSamples, tok, self, dir)
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// handoffInputs are the absolute paths of the bundled datasets' directory
// and of a tokenizer for a handoff to fit its rows with.
func handoffInputs(t *testing.T) (data, tokenizer string) {
	t.Helper()
	data, err := filepath.Abs("../../specs/examples/data")
	if err != nil {
		t.Fatal(err)
	}
	tokenizer, err = filepath.Abs("../../internal/tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	return data, tokenizer
}

func launches(dir string, index int) []int {
	b, _ := os.ReadFile(filepath.Join(dir, "launches-"+strconv.Itoa(index)))
	var pids []int
	for _, l := range strings.Fields(string(b)) {
		if p, err := strconv.Atoi(l); err == nil {
			pids = append(pids, p)
		}
	}
	return pids
}

func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// A zombie has exited; only its parent's wait is missing.
	f := strings.Fields(string(b))
	return len(f) > 2 && f[2] != "Z"
}

// TestHandoff_KilledWhileExtracting kills eaglet with SIGKILL while shards
// are being extracted: no extraction outlives it, the rerun launches only
// the shards that did not finish, and a changed cap writes a new version
// beside the old one and extracts that.
func TestHandoff_KilledWhileExtracting(t *testing.T) {
	if testing.Short() {
		t.Skip("kills the real binary")
	}
	bin := buildEaglet(t)
	dir := t.TempDir()
	spec := handoffSpec(t, dir, 40)
	// Shard 0 finishes at once; 1 and 2 hang until killed.
	cmd := exec.Command(bin, "run", spec)
	cmd.Env = append(os.Environ(), "EAGLET_FAKE_SLEEP_1=1m", "EAGLET_FAKE_SLEEP_2=1m", "EAGLET_FAKE_SLEEP_3=1m")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(launches(dir, 1)) == 0 || len(launches(dir, 2)) == 0 {
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("shards 1 and 2 never launched:\n%s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	children := append(launches(dir, 1), launches(dir, 2)...)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left := 0
		for _, pid := range children {
			if alive(pid) {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d extraction processes outlived the killed eaglet", left)
		}
	}
	if n := len(launches(dir, 3)); n != 0 {
		t.Fatalf("shard 3 launched %d times with two slots held by hanging shards", n)
	}

	if code, o := runBin(bin, "run", spec); code != 0 {
		t.Fatalf("rerun: exit %d\n%s", code, o)
	}
	for i, want := range []int{1, 2, 2, 1} {
		if got := len(launches(dir, i)); got != want {
			t.Errorf("shard %d launched %d times over both runs; want %d (only unfinished shards are launched again)", i, got, want)
		}
	}
	first, err := os.Readlink(filepath.Join(dir, "out", "current"))
	if err != nil {
		t.Fatal(err)
	}

	// A cap change is a new version; the old one keeps its shards and outputs.
	handoffSpec(t, dir, 30)
	if code, o := runBin(bin, "run", spec); code != 0 {
		t.Fatalf("run after the cap change: exit %d\n%s", code, o)
	}
	second, _ := os.Readlink(filepath.Join(dir, "out", "current"))
	if second == first {
		t.Fatalf("a cap change kept version %s", first)
	}
	for i := range 4 {
		for _, v := range []string{first, second} {
			if _, err := os.Stat(filepath.Join(dir, "out", v, fmt.Sprintf("hs-%d.txt", i))); err != nil {
				t.Errorf("version %s: shard %d's extraction output: %v", v, i, err)
			}
		}
	}
}
