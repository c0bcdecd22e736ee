//go:build linux

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenStore_ReadOnly: a store eaglet cannot write says so, not "no such
// file or directory" for a file that exists. As root, the test needs to
// bind-mount a directory read-only (skipped where it may not).
func TestOpenStore_ReadOnly(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.db")
	s, err := openStore(path)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	want := "no permission to write"
	if os.Geteuid() == 0 {
		ro := t.TempDir()
		if err := unix.Mount(dir, ro, "", unix.MS_BIND, ""); err != nil {
			t.Skipf("root cannot be refused by permissions, and bind-mounting failed: %v", err)
		}
		t.Cleanup(func() { unix.Unmount(ro, 0) })
		if err := unix.Mount("", ro, "", unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY, ""); err != nil {
			t.Skipf("remounting read-only failed: %v", err)
		}
		path, want = filepath.Join(ro, "s.db"), "is on a read-only file system"
	} else {
		os.Chmod(dir, 0o555)
		os.Chmod(path, 0o444)
		t.Cleanup(func() { os.Chmod(dir, 0o755) })
	}
	s, err = openStore(path)
	if err == nil && os.Geteuid() != 0 {
		s.Close()
		t.Skip("this SQLite opens a store in a directory it cannot write")
	}
	if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "no such file") {
		t.Errorf("err = %v; want one saying %q", err, want)
	}
}
