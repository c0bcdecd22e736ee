package state

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestStore_Lock_Damaged: a store whose pages are corrupt opens (status
// and report read what they can) but is never taken for writing.
func TestStore_Lock_Damaged(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	items := make([]Item, 400)
	for i := range items {
		items[i] = Item{Key: fmt.Sprintf("k%04d", i), Status: 1, Data: bytes.Repeat([]byte{'x'}, 500)}
	}
	if err := s.Commit("i", items); err != nil {
		t.Fatal(err)
	}
	var root int64
	if err := s.r.QueryRow(`SELECT rootpage FROM sqlite_master WHERE name = 'items'`).Scan(&root); err != nil {
		t.Fatal(err)
	}
	s.Close()
	// The header and cell pointers of the records' root page.
	f, _ := os.OpenFile(path, os.O_RDWR, 0)
	f.WriteAt(bytes.Repeat([]byte{0xff}, 3000), (root-1)*newPageSize+8)
	f.Close()

	s, err = Open(path)
	if err != nil {
		t.Fatalf("Open of a damaged store: %v; want it open for reading", err)
	}
	defer s.Close()
	var de *DamagedError
	if err := s.Lock(); !errors.As(err, &de) || de.Path != path || len(de.Problems) == 0 {
		t.Fatalf("Lock = %v; want a *DamagedError naming %s", err, path)
	}
}

// TestStore_Open_SchemaVersionZero: a store whose tables are there but whose
// version says none is refused with what to do, not with SQLite's "table
// instances already exists" from migrating it again.
func TestStore_Open_SchemaVersionZero(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(`PRAGMA user_version = 0`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	_, err = Open(path)
	if err == nil || !strings.Contains(err.Error(), "open state "+path+": the file has ") ||
		!strings.Contains(err.Error(), "but schema version 0") || !strings.Contains(err.Error(), "move it away to start afresh") {
		t.Errorf("Open = %v; want it refused with what to do", err)
	}
}
