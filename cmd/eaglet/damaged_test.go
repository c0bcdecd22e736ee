package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLI_DamagedStoreNotWritten: a run on a store whose pages are corrupt
// writes nothing into it, names the file and what to do, and plan leaves
// it as it is too.
func TestCLI_DamagedStoreNotWritten(t *testing.T) {
	spec := quickSpec(t)
	if code, _, errOut := eaglet("run", spec); code != exitOK {
		t.Fatalf("run: %s", errOut)
	}
	db := filepath.Join(filepath.Dir(spec), "runs", "quickstart", "state.db")
	f, err := os.OpenFile(db, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	// A page in the middle of the records: the file opens, its pages lie.
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xff}, 3000), 16384*59+8); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before, _ := os.ReadFile(db)
	code, out, errOut := eaglet("run", spec)
	for _, want := range []string{"state " + db + " is damaged (SQLite's quick_check: ", "restore it", "move it away to start afresh"} {
		if code == exitOK || !strings.Contains(errOut, want) {
			t.Errorf("run on a damaged store: exit %d, want %q in:\n%s%s", code, want, out, errOut)
		}
	}
	if strings.Contains(out+errOut, "nothing left to do") {
		t.Errorf("run on a damaged store says nothing is left to do:\n%s%s", out, errOut)
	}
	eaglet("plan", spec)
	if after, _ := os.ReadFile(db); !bytes.Equal(before, after) {
		t.Error("the damaged store was written")
	}
	for _, suffix := range []string{"-wal"} {
		if b, err := os.ReadFile(db + suffix); err == nil && len(b) > 0 {
			t.Errorf("%s%s holds %d bytes written into the damaged store", filepath.Base(db), suffix, len(b))
		}
	}
}
