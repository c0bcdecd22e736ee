package dataset

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

// FuzzChatRow checks the scanner a chat row is read by against
// encoding/json, which it stands in for: whatever row it takes, it must
// find the members json.Unmarshal finds, and in each message list the
// fields json.Unmarshal finds in []wireMessage.
func FuzzChatRow(f *testing.F) {
	for _, seed := range datasetSeeds(f) {
		f.Add(seed)
	}
	for _, s := range []string{`{"messages":[{"Role":"user"}]}`, `{"messages":[],"messages":[{"role":"a"}]}`,
		`{"prompt":[{"content":"x","ROLE":"u"}],"id":1}`, `{"messages" : [ {"role" : "user" , "content" : "hi\n"} ] }`, `{"messages":[{"role":"a"}],"messages":"x"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s := scanners.Get().(*scanner)
		defer scanners.Put(s)
		obj, lists, ok := s.chatRow(data)
		if !ok {
			return
		}
		var want object
		if err := json.Unmarshal(data, &want); err != nil {
			t.Fatalf("scanner took a row encoding/json refuses (%v): %s", err, data)
		}
		if len(obj) != len(want) {
			t.Fatalf("scanner found %d members, encoding/json %d: %s", len(obj), len(want), data)
		}
		for k, v := range want {
			if !bytes.Equal(obj[k], v) {
				t.Fatalf("member %q: scanner %s, encoding/json %s", k, obj[k], v)
			}
		}
		for _, l := range lists {
			// A name given twice is the last one's, as in obj, and is
			// read as messages only when that is a list (messageList).
			raws, _ := decoded(lists, l.name)
			if !isArray(obj[l.name]) {
				continue
			}
			var wires []wireMessage
			if err := json.Unmarshal(obj[l.name], &wires); err != nil {
				t.Fatalf("scanner read %q as messages, encoding/json refuses (%v): %s", l.name, err, data)
			}
			if got, want := fmt.Sprint(raws), fmt.Sprint(fromWires(wires)); got != want {
				t.Fatalf("messages %q: scanner %s, encoding/json %s", l.name, got, want)
			}
		}
	})
}
