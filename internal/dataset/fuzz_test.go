package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzReader reads arbitrary bytes as a dataset file, detected (auto) and
// forced into every shape: it must never panic or hang, and never change
// text silently: no U+FFFD reaches a record unless the input spelled one.
// Seeds are the first row of every real file in testdata, plus the policy
// table's odd inputs; testdata/fuzz/FuzzReader holds inputs the fuzzer
// found interesting. Parquet input is left out: parquet-go trusts the
// sizes in a file's footer, and a fuzzed one allocates gigabytes.
func FuzzReader(f *testing.F) {
	for _, seed := range datasetSeeds(f) {
		f.Add(seed)
	}
	for _, s := range []string{"", "\n\n", "\ufeff{\"prompt\":\"hi\"}\r\n", "{\"prompt\":\"caf\xff\"}", `{"prompt":"\ud800"}`, "[]", "[\n{\"prompt\": "} {
		f.Add([]byte(s))
	}
	formats := []string{"auto"}
	for _, d := range FormatDoc() {
		formats = append(formats, d[0])
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 64<<10 || bytes.HasPrefix(data, magicParquet) {
			return
		}
		sum := sha256.Sum256(data)
		path := filepath.Join(dir, hex.EncodeToString(sum[:8])+".jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(path)
		spelledFFFD := bytes.Contains(data, []byte("\ufffd")) || bytes.Contains(bytes.ToLower(data), []byte(`\ufffd`))
		for _, format := range formats {
			r, err := Open(path, Options{Format: format, OnError: OnErrorSkip})
			if err != nil {
				continue
			}
			for range 10_000 {
				rec, err := r.Next()
				if err != nil {
					break
				}
				b, _ := json.Marshal(rec)
				if !utf8.Valid(b) || (!spelledFFFD && strings.Contains(string(b), "\ufffd")) {
					t.Fatalf("format %s: a record holds text the input did not: %s", format, b)
				}
			}
			r.Close()
		}
	})
}

// datasetSeeds returns the first row of every file in testdata: a line of
// JSONL, or the first element of a JSON array as a one-element array.
func datasetSeeds(f *testing.F) [][]byte {
	var seeds [][]byte
	files, _ := filepath.Glob("testdata/*/*")
	for _, p := range files {
		if strings.HasSuffix(p, ".golden") || strings.HasSuffix(p, ".md") || strings.HasSuffix(p, ".parquet") {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			continue
		}
		if first, _, _ := bytes.Cut(bytes.TrimSpace(b), []byte("\n")); json.Valid(first) && len(first) < 8<<10 {
			seeds = append(seeds, first)
			continue
		}
		dec := json.NewDecoder(bytes.NewReader(b))
		if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
			continue
		}
		var el json.RawMessage
		if dec.Decode(&el) == nil && len(el) < 8<<10 {
			seeds = append(seeds, append(append([]byte("["), el...), ']'))
		}
	}
	if len(seeds) < 10 {
		f.Fatalf("only %d seeds from testdata", len(seeds))
	}
	return seeds
}
