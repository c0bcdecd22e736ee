package tokenizer

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestReadGz reads a gzipped file whole, its buffer sized from the gzip
// trailer, and falls back to a guess when the trailer says nothing or too
// much.
func TestReadGz(t *testing.T) {
	// Compressing about as a vocabulary does (a repeated line would
	// compress past the bound on trusting the trailer).
	var content []byte
	for i := range 5000 {
		content = fmt.Appendf(content, `"t%d": %d, `, i*7919%100003, i)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(content)
	zw.Close()
	// A trailer claiming zero bytes (a 4 GiB file, or a broken writer):
	// the size is guessed and the content read all the same.
	zero := bytes.Clone(z.Bytes())
	copy(zero[len(zero)-4:], []byte{0, 0, 0, 0})
	huge := bytes.Clone(z.Bytes())
	copy(huge[len(huge)-4:], []byte{0xff, 0xff, 0xff, 0xff})
	for _, tt := range []struct {
		name string
		gz   []byte
		size int
	}{
		{"trailer", z.Bytes(), len(content)},
		{"zero trailer", zero, 4 * len(zero)},
		{"huge trailer", huge, 4 * len(huge)},
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
		if tt.name != "trailer" {
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
