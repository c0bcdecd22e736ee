package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLI_OutputSafety follows one output through runs: a file eaglet did
// not write is refused before anything runs and left as it was; eaglet's
// own file is replaced with the previous version kept as .prev, and a temp
// file a killed run left is removed.
func TestCLI_OutputSafety(t *testing.T) {
	spec := quickSpec(t)
	src, _ := os.ReadFile(spec)
	dir := filepath.Dir(spec)
	out := filepath.Join(dir, "runs", "quickstart", "train.jsonl")
	os.MkdirAll(filepath.Dir(out), 0o755)
	os.WriteFile(out, []byte("my own notes\n"), 0o644)

	code, _, stderr := eaglet("run", spec)
	if code != exitSpec || !strings.Contains(stderr, "train.jsonl exists and eaglet did not write it (no train.jsonl.eaglet.json beside it)") || !strings.Contains(stderr, "`overwrite: true`") {
		t.Fatalf("run over a foreign file: exit %d\n%s\nwant exit %d naming the file and overwrite", code, stderr, exitSpec)
	}
	if b, _ := os.ReadFile(out); string(b) != "my own notes\n" {
		t.Fatal("the foreign file was changed")
	}
	os.Remove(out)

	if code, _, stderr := eaglet("run", spec); code != exitOK {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	first, _ := os.ReadFile(out)
	if _, err := os.Stat(out + ".eaglet.json"); err != nil {
		t.Fatalf("no marker beside the output: %v", err)
	}
	leaked := out + ".123456.tmp"
	os.WriteFile(leaked, []byte("half a file"), 0o644)
	// Another shuffle seed reruns merge only.
	os.WriteFile(spec, []byte(strings.Replace(string(src), "shuffle_seed: ", "shuffle_seed: 1", 1)), 0o644)
	if code, _, stderr := eaglet("run", spec); code != exitOK {
		t.Fatalf("second run: exit %d\n%s", code, stderr)
	}
	prev, _ := os.ReadFile(out + ".prev")
	second, _ := os.ReadFile(out)
	if string(prev) != string(first) || string(second) == string(first) || len(second) != len(first) {
		t.Errorf("after a reshuffle: .prev %d bytes (same as the first: %t), new %d bytes; want the first kept as .prev and a reshuffled file", len(prev), string(prev) == string(first), len(second))
	}
	if _, err := os.Stat(leaked); err == nil {
		t.Error("the temp file of a killed run is still there")
	}
}
