package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// The tokenizer files a user points eaglet at are input too: these fuzz
// tests feed arbitrary bytes to each of their readers. None may panic,
// hang or allocate without bound; a tokenizer that loads must encode any
// text to ids it has and decode them again. Seeds are cut from the real
// files in testdata (the first 300 ids of each vocabulary and the merges
// among them, the first 300 lines of o200k's rank file, each model's
// tokenizer_config.json).

// FuzzFromJSON reads arbitrary bytes as tokenizer.json.
func FuzzFromJSON(f *testing.F) {
	for _, model := range []string{"qwen3", "llama2", "deepseek_v3", "gpt4o"} {
		f.Add(trimmedTokenizer(f, filepath.Join("testdata", model, "tokenizer.json.gz"), 300), "Hello, wörld! 123 <|im_end|>\n\tdone")
	}
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		if len(data) > 256<<10 || len(text) > 4<<10 {
			return
		}
		tok, err := fromJSON(data, Config{})
		if err != nil {
			return
		}
		checkEncode(t, tok, text)
	})
}

// FuzzTiktoken reads arbitrary bytes as a tiktoken rank file.
func FuzzTiktoken(f *testing.F) {
	data, _, err := readMaybeGz(filepath.Join("testdata", "o200k", "o200k_base.tiktoken.gz"))
	if err != nil {
		f.Fatal(err)
	}
	var head bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	for i := 0; i < 300 && sc.Scan(); i++ {
		head.Write(sc.Bytes())
		head.WriteByte('\n')
	}
	f.Add(head.Bytes(), "Hello, wörld! 123")
	f.Add([]byte("IQ== 0\nIg== 1\nIQ== 2\n"), "!!\"")
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte, text string) {
		if len(data) > 256<<10 || len(text) > 4<<10 {
			return
		}
		path := filepath.Join(dir, "fuzz.tiktoken")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		tok, err := LoadTiktoken(path, TiktokenSpec{Pattern: patO200K})
		if err != nil {
			return
		}
		checkEncode(t, tok, text)
	})
}

// FuzzConfig reads arbitrary bytes as tokenizer_config.json.
func FuzzConfig(f *testing.F) {
	files, _ := filepath.Glob("testdata/*/tokenizer_config.json.gz")
	for _, p := range files {
		data, _, err := readMaybeGz(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		parseConfig(data)
	})
}

// checkEncode encodes text and decodes the ids: every id must be one the
// tokenizer has.
func checkEncode(t *testing.T, tok *Tokenizer, text string) {
	ids := tok.Encode(text, true)
	for _, id := range ids {
		if id < 0 || id >= tok.VocabSize() {
			t.Fatalf("Encode(%q) gave id %d of a %d-token vocabulary", text, id, tok.VocabSize())
		}
	}
	tok.Decode(ids)
}

// trimmedTokenizer cuts a real tokenizer.json down to its first n ids and
// the merges among them, keeping everything else (normalizer,
// pre-tokenizer, decoder, added tokens) as the model has it.
func trimmedTokenizer(f *testing.F, path string, n int) []byte {
	data, _, err := readMaybeGz(path)
	if err != nil {
		f.Fatal(err)
	}
	var file map[string]any
	if err := json.Unmarshal(data, &file); err != nil {
		f.Fatal(err)
	}
	model := file["model"].(map[string]any)
	keep := map[string]bool{}
	if vocab, ok := model["vocab"].(map[string]any); ok {
		for tok, id := range vocab {
			if id.(float64) >= float64(n) {
				delete(vocab, tok)
			} else {
				keep[tok] = true
			}
		}
	}
	if merges, ok := model["merges"].([]any); ok {
		var kept []any
		for _, m := range merges {
			var a, b string
			switch m := m.(type) {
			case string:
				a, b, _ = cutSpace(m)
			case []any:
				a, b = m[0].(string), m[1].(string)
			}
			if keep[a] && keep[b] && keep[a+b] {
				kept = append(kept, m)
			}
		}
		model["merges"] = kept
	}
	var added []any
	for _, a := range asSlice(file["added_tokens"]) {
		if a.(map[string]any)["id"].(float64) < float64(n) {
			added = append(added, a)
		}
	}
	file["added_tokens"] = added
	out, err := json.Marshal(file)
	if err != nil {
		f.Fatal(err)
	}
	return out
}

func cutSpace(s string) (string, string, bool) {
	for i := 0; i < len(s); i++ {
		if s[i] == ' ' {
			return s[:i], s[i+1:], true
		}
	}
	return s, "", false
}

func asSlice(v any) []any {
	s, _ := v.([]any)
	return s
}
