package outfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func write(t *testing.T, path, text string, o Options) error {
	t.Helper()
	return Write(path, o, func(w io.Writer) error {
		_, err := io.WriteString(w, text)
		return err
	})
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestWrite_KeepsPreviousVersion(t *testing.T) {
	path := filepath.Join(t.TempDir(), "out", "train.jsonl")
	if err := write(t, path, "v1\n", Options{}); err != nil {
		t.Fatal(err)
	}
	if exists(path + PrevSuffix) {
		t.Error("a first write made a .prev")
	}
	if err := write(t, path, "v2\n", Options{}); err != nil {
		t.Fatal(err)
	}
	if err := write(t, path, "v3\n", Options{}); err != nil {
		t.Fatalf("eaglet refused to replace its own file and .prev: %v", err)
	}
	if got, prev := read(t, path), read(t, path+PrevSuffix); got != "v3\n" || prev != "v2\n" {
		t.Errorf("file %q, prev %q; want v3 and v2", got, prev)
	}
	fi, _ := os.Stat(path)
	if fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v; want 0644", fi.Mode().Perm())
	}
}

func TestWrite_RefusesForeignFile(t *testing.T) {
	tests := []struct {
		name, file string // file is created by someone else
	}{
		{"the file", "train.jsonl"},
		{"its .prev", "train.jsonl.prev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "train.jsonl")
			foreign := filepath.Join(dir, tt.file)
			os.WriteFile(foreign, []byte("precious\n"), 0o644)
			err := write(t, path, "new\n", Options{})
			var no *NotOursError
			if !errors.As(err, &no) || no.Path != foreign {
				t.Fatalf("err = %v; want a NotOursError for %s", err, foreign)
			}
			if !strings.Contains(err.Error(), "train.jsonl.eaglet.json") {
				t.Errorf("the error does not name the marker it looked for: %v", err)
			}
			if read(t, foreign) != "precious\n" {
				t.Error("the foreign file was changed")
			}
			if err := write(t, path, "new\n", Options{Overwrite: true}); err != nil {
				t.Fatal(err)
			}
			if read(t, path) != "new\n" {
				t.Error("Overwrite did not write the file")
			}
			if tt.file == "train.jsonl" && read(t, path+PrevSuffix) != "precious\n" {
				t.Error("the replaced foreign file was not kept as .prev")
			}
		})
	}
}

func TestWrite_FailedFillLeavesOldFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "train.jsonl")
	if err := write(t, path, "v1\n", Options{}); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Write(path, Options{}, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v; want boom", err)
	}
	if read(t, path) != "v1\n" || exists(path+PrevSuffix) {
		t.Error("a failed write changed the file or made a .prev")
	}
	if tmps, _ := filepath.Glob(filepath.Join(dir, "*.tmp")); len(tmps) > 0 {
		t.Errorf("left %v", tmps)
	}
}

func TestWrite_RemovesLeakedTemps(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "train.jsonl")
	leaked := []string{"train.jsonl.123456.tmp", "train.jsonl.9.tmp"}
	kept := []string{"train.jsonl.backup.tmp", "other.jsonl.123.tmp", "train.jsonl"}
	for _, n := range append(leaked, kept[:2]...) {
		os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o644)
	}
	if err := write(t, path, "v1\n", Options{}); err != nil {
		t.Fatal(err)
	}
	for _, n := range leaked {
		if exists(filepath.Join(dir, n)) {
			t.Errorf("%s of a killed run is still there", n)
		}
	}
	for _, n := range kept {
		if !exists(filepath.Join(dir, n)) {
			t.Errorf("%s was removed; it is not a temp file of this output", n)
		}
	}
}
