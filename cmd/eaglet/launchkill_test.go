package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
)

// TestRun_KilledWhileExtractionRuns kills eaglet with SIGKILL while a
// handoff's extraction commands run, each having started a worker of its
// own, as torchrun does. plan says the handoff stopped early (not that
// its input changed), and the next run stops the workers the dead run
// left before it launches their shards again, so no stale worker holds
// the GPUs beside its relaunch; nothing is generated again. --force on
// the handoff then launches every shard again.
func TestRun_KilledWhileExtractionRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	bin := buildEaglet(t)
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 3, MeanTokens: 30})})
	dir := t.TempDir()
	chatPrompts(t, dir, 12, "chat.jsonl")
	// A sleep no other process runs, to find the workers by.
	sleep := fmt.Sprintf("sleep 97.%d", os.Getpid()%1000)
	release := filepath.Join(dir, "release")
	spec := filepath.Join(dir, "spec.yaml")
	os.WriteFile(spec, []byte(`version: 1
name: launchkill
state: state.db
datasets:
  chat: {source: data/chat.jsonl, format: messages}
endpoints:
  target: {api: openai, urls: ["`+srv.URL+`/v1"], model: sim, concurrency: 4}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {endpoint: target, max_tokens: 64}}
  - name: handoff
    uses: handoff
    needs: [generate]
    with:
      out: out
      format: specforge
      shards: 2
      run:
        # Once released, a shard's command succeeds at once; before, it
        # starts a worker and waits with it.
        argv: [sh, -c, 'test -e "$2" && exit 0; `+sleep+` & `+sleep+`', sh, "{shard}", "`+release+`"]
        concurrency: 2
        grace: 1s
`), 0o644)
	// procs lists the processes whose command line is one of ours.
	procs := func(ours func(cmdline string) bool) []int {
		var pids []int
		paths, _ := filepath.Glob("/proc/[0-9]*/cmdline")
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err == nil && ours(string(bytes.ReplaceAll(bytes.TrimRight(b, "\x00"), []byte{0}, []byte(" ")))) {
				pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
				pids = append(pids, pid)
			}
		}
		return pids
	}
	workers := func() []int { return procs(func(c string) bool { return c == sleep }) }
	commands := func() []int { return procs(func(c string) bool { return c != sleep && strings.Contains(c, release) }) }
	t.Cleanup(func() {
		for _, pid := range workers() {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	})

	var log bytes.Buffer
	cmd := exec.Command(bin, "run", "--progress", "lines", spec)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for len(workers()) < 4 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(workers()); n < 4 {
		cmd.Process.Kill()
		t.Fatalf("%d of 4 sleeps started:\n%s", n, log.String())
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	asked := srv.Take()
	// The commands (sh) end on the SIGTERM the kernel sends them; the
	// workers they started are left.
	for deadline := time.Now().Add(time.Minute); len(commands()) > 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	if n := len(commands()); n != 0 {
		t.Fatalf("%d commands outlived the killed eaglet", n)
	}
	if n := len(workers()); n != 4 {
		t.Fatalf("after the kill %d sleeps run; want the 4 left behind", n)
	}

	code, out := runBin(bin, "plan", spec)
	if code != 0 || !regexp.MustCompile(`(?m)^handoff .*will finish: last run stopped early$`).MatchString(out) {
		t.Errorf("plan after the kill (exit %d):\n%s", code, out)
	}
	if err := os.WriteFile(release, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out = runBin(bin, "run", "--progress", "lines", spec)
	if code != 0 {
		t.Fatalf("the run after the kill exited %d:\n%s", code, out)
	}
	if n := strings.Count(out, "cut short by a killed eaglet still running"); n != 2 {
		t.Errorf("the run stopped the leftovers of %d shards; want 2:\n%s", n, out)
	}
	if pids := workers(); len(pids) != 0 {
		t.Errorf("workers of the killed run still running: %v", pids)
	}
	if !strings.Contains(out, "extraction: 2 of 2 shards launched") {
		t.Errorf("the run did not launch both shards again:\n%s", out)
	}
	// --force on the handoff launches its shards again, though up to date.
	if code, out = runBin(bin, "run", "--progress", "lines", "--stage", "handoff", "--force", spec); code != 0 ||
		!strings.Contains(out, "extraction: 2 of 2 shards launched") {
		t.Errorf("run --stage handoff --force (exit %d) did not launch both shards:\n%s", code, out)
	}
	if again := srv.Take(); again != 0 || asked != 12 {
		t.Errorf("%d requests before the kill, %d after; want 12 and 0", asked, again)
	}
}
