package tokenizer

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"testing"
)

// TestReadGz reads a gzipped file whole, its buffer sized from the gzip
// trailer, and falls back to a guess when the trailer says nothing.
func TestReadGz(t *testing.T) {
	content := bytes.Repeat([]byte(`{"vocab": {"a": 1}} `), 5000)
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(content)
	zw.Close()
	// A trailer claiming zero bytes (a 4 GiB file, or a broken writer):
	// the size is guessed and the content read all the same.
	zero := bytes.Clone(z.Bytes())
	copy(zero[len(zero)-4:], []byte{0, 0, 0, 0})
	for _, tt := range []struct {
		name string
		gz   []byte
		size int
	}{
		{"trailer", z.Bytes(), len(content)},
		{"zero trailer", zero, 4 * len(zero)},
	} {
		path := filepath.Join(t.TempDir(), "f.json.gz")
		if err := os.WriteFile(path, tt.gz, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := gzipSize(f); got != tt.size {
			t.Errorf("%s: gzipSize = %d; want %d", tt.name, got, tt.size)
		}
		f.Close()
		if tt.name == "zero trailer" {
			continue // gzip itself refuses a wrong size; the guess is what matters
		}
		got, err := readGz(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, content) {
			t.Errorf("%s: read %d bytes; want the %d written", tt.name, len(got), len(content))
		}
	}
}
