package tokenizer

import (
	"encoding/base64"
	"encoding/json"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// vector is one reference encoding, made by testdata/gen/vectors.js with
// the Rust Hugging Face tokenizers.
type vector struct {
	Text       string `json:"text"` // base64: the bytes may be invalid UTF-8
	IDs        []int  `json:"ids"`
	IDsSpecial []int  `json:"ids_special"`
	Decoded    string `json:"decoded"`
}

const testdata = "testdata"

// conformanceModels are the directories of testdata with reference vectors.
var conformanceModels = []string{"qwen3", "llama3", "deepseek_v3", "llama2", "gpt4o", "gpt_oss", "o200k"}

var (
	loadedMu sync.Mutex
	loaded   = map[string]*Tokenizer{}
)

// loadModel loads a testdata tokenizer once per test binary.
func loadModel(t testing.TB, name string) *Tokenizer {
	t.Helper()
	loadedMu.Lock()
	defer loadedMu.Unlock()
	if tk, ok := loaded[name]; ok {
		return tk
	}
	tk, err := Load(filepath.Join(testdata, name))
	if err != nil {
		t.Fatal(err)
	}
	loaded[name] = tk
	return tk
}

// readGzJSON decodes a gzip-compressed JSON file of testdata.
func readGzJSON(t *testing.T, path string, v any) {
	t.Helper()
	data, err := readGz(filepath.Join(testdata, path))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

func readVectors(t *testing.T, name string) []vector {
	var vs []vector
	readGzJSON(t, filepath.Join(name, "vectors.json.gz"), &vs)
	return vs
}

func TestConformance(t *testing.T) {
	for _, name := range conformanceModels {
		t.Run(name, func(t *testing.T) {
			checkVectors(t, loadModel(t, name), readVectors(t, name))
		})
	}
}

// checkVectors compares encodings (with and without special tokens) and
// decodes with the reference's.
func checkVectors(t *testing.T, tk *Tokenizer, vs []vector) {
	t.Helper()
	fails := 0
	for i, v := range vs {
		b, err := base64.StdEncoding.DecodeString(v.Text)
		if err != nil {
			t.Fatal(err)
		}
		text := string(b)
		if got := tk.Encode(text, false); !slices.Equal(got, v.IDs) {
			t.Errorf("vector %d %q:\n got %v\nwant %v", i, text, got, v.IDs)
			fails++
		}
		if got := tk.Encode(text, true); !slices.Equal(got, v.IDsSpecial) {
			t.Errorf("vector %d %q with special tokens:\n got %v\nwant %v", i, text, got, v.IDsSpecial)
			fails++
		}
		if got := tk.Decode(v.IDs); got != v.Decoded {
			t.Errorf("vector %d: Decode = %q, want %q", i, got, v.Decoded)
			fails++
		}
		if fails > 10 {
			t.Fatal("too many failures")
		}
	}
}

// TestEncode_Concurrent encodes the vectors from several goroutines at once
// (run with -race): the piece cache is the only shared mutable state.
func TestEncode_Concurrent(t *testing.T) {
	tk := loadModel(t, "qwen3")
	vs := readVectors(t, "qwen3")
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range vs {
				v := vs[(i+g*37)%len(vs)]
				b, _ := base64.StdEncoding.DecodeString(v.Text)
				if got := tk.Encode(string(b), false); !slices.Equal(got, v.IDs) {
					t.Errorf("goroutine %d, vector %d differs", g, i)
					return
				}
			}
		})
	}
	wg.Wait()
}
