package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReport_ReadOnlyStore: `eaglet report` reads a store on a read-only
// file system (an archived run), where SQLite cannot make the -shm file
// WAL reads need, and says where to write the report when its default
// place is read-only too. The file system is a read-only bind mount in a
// user namespace of its own (unshare), skipped where there is none.
func TestReport_ReadOnlyStore(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	if exec.Command("unshare", "-rm", "true").Run() != nil {
		t.Skip("no user namespaces here for a read-only mount")
	}
	bin := buildEaglet(t)
	spec := quickSpec(t)
	if code, _, errOut := eaglet("run", spec); code != exitOK {
		t.Fatalf("run: %s", errOut)
	}
	runs := filepath.Join(filepath.Dir(spec), "runs")
	out := filepath.Join(t.TempDir(), "r.html")
	script := `mount --bind "$1" "$1" && mount -o remount,bind,ro "$1" && "$2" report --out "$3" "$4" && "$2" report "$4"`
	b, _ := exec.Command("unshare", "-rm", "sh", "-c", script, "sh", runs, bin, out, spec).CombinedOutput()
	got := string(b)
	if fi, err := os.Stat(out); err != nil || fi.Size() == 0 || !strings.Contains(got, "wrote "+out) {
		t.Errorf("report --out of a read-only store wrote nothing:\n%s", got)
	}
	html := filepath.Join(runs, "quickstart", "report.html") // the run's, there already
	want := "eaglet report: write report " + html + ": " + html + " is on a read-only file system; pass --out FILE to write it elsewhere"
	if !strings.Contains(got, want) {
		t.Errorf("report beside a read-only store:\n%s\nwant %q", got, want)
	}
}
