package tokenizer

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoad_Errors(t *testing.T) {
	tests := []struct {
		name, json string
		want       []string
	}{
		{"malformed", `{"model": {`, []string{"tokenizer.json"}},
		{"unsupported model", `{"model": {"type": "Unigram", "vocab": []}}`, []string{"tokenizer.json", `unsupported type "Unigram"`}},
		{"unsupported pre-tokenizer", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "BertPreTokenizer"}}`,
			[]string{"tokenizer.json", "pre_tokenizer", `"BertPreTokenizer"`}},
		{"unsupported regex", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "Split", "pattern": {"Regex": "a(?=b)"}, "behavior": "Isolated"}}`,
			[]string{"tokenizer.json", "unsupported regex", "a(?=b)"}},
		{"merge outside vocab", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}}`, []string{"merge 0", `"b"`}},
		{"unsupported decoder", `{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "decoder": {"type": "WordPiece"}}`, []string{"decoder", `"WordPiece"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte(tt.json), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(dir)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("missing directory: no error")
	}
	if _, err := Load(t.TempDir()); err == nil || !strings.Contains(err.Error(), "tokenizer.json") {
		t.Errorf("empty directory: %v", err)
	}
}

func TestDecode_OutOfRangeAndInvalid(t *testing.T) {
	tk := loadModel(t, "qwen3")
	if got := tk.Decode([]int{-1, 1 << 30, 9707}); got != "Hello" {
		t.Errorf("Decode with bad ids = %q", got)
	}
	// A lone continuation byte token decodes to U+FFFD, not a panic.
	id, ok := tk.TokenID("\u0120")
	if !ok {
		t.Fatal("no Ġ token")
	}
	if got := tk.Decode([]int{int(tk.model.byteIDs[0x80]), id}); got != "\uFFFD " {
		t.Errorf("Decode of a stray byte = %q", got)
	}
}

func TestValidUTF8_MaximalSubparts(t *testing.T) {
	tests := map[string]string{
		"a\xffb":                     "a\uFFFDb",
		"\xe2\x82 \xc3":              "\uFFFD \uFFFD",
		"\xf0\x9f\x98 \xed\xa0\x80A": "\uFFFD \uFFFD\uFFFD\uFFFDA",
		"ok":                         "ok",
	}
	for in, want := range tests {
		if got := validUTF8(in); got != want {
			t.Errorf("validUTF8(%q) = %q, want %q", in, got, want)
		}
	}
}
