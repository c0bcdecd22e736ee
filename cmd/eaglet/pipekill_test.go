package main

import (
	"bytes"
	"database/sql"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
)

// TestRun_PipelineSurvivesSIGKILL kills the real binary while each of load,
// cap, filter and merge writes its output, over 40,000 small records, where batch stages
// commit 2,048 records a transaction on the writer's driver connection and
// the filter's pass commits 2,048 outcomes at a time: the run that follows
// writes the file an uninterrupted run writes, every instance holds the
// rows it holds, no staged output is left behind, and no filter outcome was
// committed twice.
func TestRun_PipelineSurvivesSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the real binary")
	}
	bin := buildEaglet(t)
	data := enginetest.Questions(t, 40_000)
	spec := func(dir string) string {
		path := filepath.Join(dir, "spec.yaml")
		if err := os.WriteFile(path, []byte(`version: 1
name: pipekill
state: state.db
datasets:
  d: {source: `+data+`, format: messages}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: 36000, seed: 1}}
  - {name: filter, uses: filter, needs: [cap], foreach: datasets, with: {keep: "prompt_chars % 5 != 2"}}
  - {name: merge, uses: merge, needs: [filter], with: {out: out.jsonl, shuffle_seed: 2}}
`), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}

	refDir := t.TempDir()
	if code, out := runBin(bin, "run", spec(refDir)); code != 0 {
		t.Fatalf("reference run exited %d:\n%s", code, out)
	}
	dir := t.TempDir()
	path := spec(dir)
	// Each run is killed once the stage it aims at has written some of its
	// rows and not all: the store is read beside the run, as status does.
	partial := 0
	for _, target := range []struct {
		inst string
		all  int
	}{{"load[d]", 40_000}, {"cap[d]", 36_000}, {"filter[d]", 36_000}, {"merge", 29_000}} {
		cmd := exec.Command(bin, "run", path)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		go func() { cmd.Wait(); close(exited) }()
		n := 0
	poll:
		for start := time.Now(); time.Since(start) < time.Minute; time.Sleep(time.Millisecond) {
			select {
			case <-exited:
				break poll
			default:
			}
			if n = countRows(filepath.Join(dir, "state.db"), target.inst); n > 0 && n < target.all {
				break
			}
		}
		cmd.Process.Signal(syscall.SIGKILL)
		<-exited
		if n > 0 && n < target.all {
			partial++
		}
		t.Logf("killed with %d rows of %s written", n, target.inst)
	}
	if partial < 2 {
		t.Fatalf("only %d kills landed while a stage was writing; the test needs a larger input", partial)
	}
	if code, out := runBin(bin, "run", path); code != 0 {
		t.Fatalf("run after the kills exited %d:\n%s", code, out)
	}
	want := mustReadFile(t, filepath.Join(refDir, "out.jsonl"))
	if got := mustReadFile(t, filepath.Join(dir, "out.jsonl")); len(want) == 0 || !bytes.Equal(got, want) {
		t.Errorf("output after the kills differs from an uninterrupted run (%d vs %d bytes)", len(got), len(want))
	}
	rows := func(dir, q string) string {
		db, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, "state.db")+"?mode=ro")
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		r, err := db.Query(q)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var b strings.Builder
		for r.Next() {
			var inst, reason string
			var status, n int
			if err := r.Scan(&inst, &status, &reason, &n); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%s %d %q %d\n", inst, status, reason, n)
		}
		return b.String()
	}
	const byInstance = `SELECT instance, status, reason, COUNT(*) FROM items WHERE live = 1
		GROUP BY instance, status, reason ORDER BY instance, status, reason`
	if got, want := rows(dir, byInstance), rows(refDir, byInstance); got != want {
		t.Errorf("rows after the kills:\n%s\nuninterrupted:\n%s", got, want)
	}
	const left = `SELECT instance, 0, '', COUNT(*) FROM items WHERE instance LIKE 'staging:%'
		OR (instance = 'filter[d]' AND attempts > 1) GROUP BY instance`
	if got := rows(dir, left); got != "" {
		t.Errorf("staged rows left or filter outcomes committed twice after the kills:\n%s", got)
	}
}

// countRows counts an instance's rows in the store at path, or 0 while
// the store cannot be read yet.
func countRows(path, inst string) int {
	db, err := sql.Open("sqlite3", "file:"+path+"?mode=ro")
	if err != nil {
		return 0
	}
	defer db.Close()
	var n int
	db.QueryRow(`SELECT COUNT(*) FROM items WHERE instance = ?`, inst).Scan(&n)
	return n
}
