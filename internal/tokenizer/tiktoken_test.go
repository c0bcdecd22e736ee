package tokenizer

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLoad_KimiStyleDirectory loads a directory laid out as Kimi-K2's is
// (tiktoken.model, specials in added_tokens_decoder). No Kimi rank file is
// available here, so o200k's ranks stand in: this checks the loading path
// and the Kimi pattern's Han split, not Kimi's ids.
func TestLoad_KimiStyleDirectory(t *testing.T) {
	ranks, err := readGz(filepath.Join(testdata, "o200k", "o200k_base.tiktoken.gz"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	config := `{"added_tokens_decoder": {"200000": {"content": "<|im_end|>", "special": true},
		"200001": {"content": "<not special>", "special": false}}, "eos_token": "<|im_end|>"}`
	for name, data := range map[string][]byte{"tiktoken.model": ranks, "tokenizer_config.json": []byte(config)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	o200k := loadModel(t, "o200k")
	text := "中文abc 中文<|im_end|>"
	ids := tk.Encode(text, false)
	if ids[len(ids)-1] != 200000 || tk.Decode(ids) != text {
		t.Errorf("Encode(%q) = %v, decodes to %q", text, ids, tk.Decode(ids))
	}
	// o200k keeps "中文abc" and " 中文" together; Kimi's pattern splits
	// Han runs off, even from the space before them.
	want := slices.Concat(o200k.Encode("中文", false), o200k.Encode("abc", false), o200k.Encode(" ", false), o200k.Encode("中文", false))
	if got := ids[:len(ids)-1]; !slices.Equal(got, want) {
		t.Errorf("Han split: got %v, want %v", got, want)
	}
	if tk.Config().EOSToken != "<|im_end|>" || tk.IsSpecial(200001) {
		t.Errorf("config: eos %q, 200001 special %v", tk.Config().EOSToken, tk.IsSpecial(200001))
	}
}
