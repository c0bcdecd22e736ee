package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
)

// TestRun_LongBatchStarvesNoOne: while one dataset's large file is loaded
// and capped, another dataset generates and commits its answers as they
// come. A kill in the middle loses at most the answers of one commit batch
// (200 ms) and those in flight; the rest are not asked for again.
func TestRun_LongBatchStarvesNoOne(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	bin := buildEaglet(t)
	// The kill must come while the big file is still being loaded or
	// capped: a machine that gets through it before the small dataset has
	// sent 60 requests tries again with a file twice as large.
	var (
		srv       *simtest.Counting
		spec      string
		delivered int
	)
	for lines := 120_000; ; lines *= 2 {
		var log string
		srv, spec, delivered, log = killDuringBigLoad(t, bin, lines)
		if !strings.Contains(log, "cap[big]: finished") {
			break
		}
		if lines >= 960_000 {
			t.Fatalf("cap[big] of %d lines finished before the kill:\n%s", lines, log)
		}
		t.Logf("cap[big] of %d lines finished before the kill; again with twice as many", lines)
	}
	if delivered < 60 {
		t.Fatalf("only %d requests before the kill; the small dataset did not generate while the big one loaded", delivered)
	}
	if code, out := runBin(bin, "run", spec); code != 0 {
		t.Fatalf("second run exited %d:\n%s", code, out)
	}
	// 140 small prompts capped to 100, and the big dataset's 100.
	again := delivered + srv.Take() - 200
	t.Logf("%d requests before the kill, %d asked again", delivered, again)
	// In flight (8), what finished within one commit interval (200 ms at
	// about 20 answers a second) and while one of the big load's write
	// batches held the store. Before batch stages wrote in short
	// transactions, every answer delivered during the load was lost.
	if again > 24 {
		t.Errorf("%d answers delivered before the kill were asked for again; want at most the 8 in flight and a commit batch", again)
	}
}

// killDuringBigLoad runs a spec whose big dataset has lines prompts beside
// a small one, and kills eaglet once the small one has sent 60 requests.
// It returns the server, the spec, the requests delivered before the kill
// and eaglet's log.
func killDuringBigLoad(t *testing.T, bin string, lines int) (*simtest.Counting, string, int, string) {
	t.Helper()
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 2, MeanTokens: 40}), Speed: 100})
	dir := t.TempDir()
	var big bytes.Buffer
	for i := range lines {
		fmt.Fprintf(&big, `{"messages": [{"role": "user", "content": "Big dataset prompt number %d, about nothing in particular."}]}`+"\n", i)
	}
	os.WriteFile(filepath.Join(dir, "big.jsonl"), big.Bytes(), 0o644)
	src, _ := os.ReadFile("../../specs/examples/data/chat.jsonl")
	os.WriteFile(filepath.Join(dir, "small.jsonl"), src, 0o644)
	spec := filepath.Join(dir, "spec.yaml")
	os.WriteFile(spec, []byte(`version: 1
name: starve
state: state.db
datasets:
  big: {source: big.jsonl, format: messages}
  small: {source: small.jsonl, format: messages}
endpoints:
  target: {api: openai, urls: ["`+srv.URL+`/v1"], model: sim, concurrency: 8}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: 100, seed: 1}}
  - {name: generate, uses: generate, needs: [cap], foreach: datasets, with: {endpoint: target, max_tokens: 64}}
`), 0o644)

	var log bytes.Buffer
	cmd := exec.Command(bin, "run", "--progress", "lines", spec)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Kill once the small dataset is well into generating.
	deadline := time.Now().Add(60 * time.Second)
	for srv.Count() < 60 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()
	return srv, spec, srv.Take(), log.String()
}
