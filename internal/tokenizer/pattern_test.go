package tokenizer

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestScanners_MatchBacktrackingRegex compares each hand-written scanner
// with Python's regex module over the conformance texts (gen/splits.py).
func TestScanners_MatchBacktrackingRegex(t *testing.T) {
	fillBMPClass()
	var ref struct {
		Texts  []string              `json:"texts"`
		Splits map[string][][]string `json:"splits"`
	}
	readGzJSON(t, filepath.Join("pretok", "splits.json.gz"), &ref)
	patterns := map[string]string{"gpt2": patGPT2, "cl100k": patCL100K, "qwen2": patQwen2, "o200k": patO200K,
		"kimi_k2": patKimiK2, "deepseek_cjk": patDSCJK, "deepseek_main": patDSMain}
	for name, pat := range patterns {
		t.Run(name, func(t *testing.T) {
			want, ok := ref.Splits[name]
			if !ok {
				t.Fatalf("no reference splits for %s", name)
			}
			s := splitter{pattern: knownPatterns[pat]}
			fails := 0
			for i, text := range ref.Texts {
				var got []string
				s.split(text, true, func(p string, _ bool) { got = append(got, p) })
				if !slices.Equal(got, want[i]) && (len(got) > 0 || len(want[i]) > 0) {
					t.Errorf("%q:\n got %q\nwant %q", text, got, want[i])
					if fails++; fails > 5 {
						t.FailNow()
					}
				}
			}
		})
	}
}
