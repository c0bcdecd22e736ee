package tokenizer

import (
	"encoding/json"
	"path/filepath"
	"testing"
)

// TestVariants checks components no shipped model combines (Metaspace,
// Digits, NFKC, Lowercase, regex Replace, Strip, the GPT-2 ByteLevel
// regex, added-token flags, every Split behavior, a BOS+EOS template)
// against the Rust tokenizers over real vocabularies (gen/variants.js).
func TestVariants(t *testing.T) {
	var variants []struct {
		Name    string                     `json:"name"`
		Base    string                     `json:"base"`
		Patch   map[string]json.RawMessage `json:"patch"`
		Added   map[string]map[string]any  `json:"added"`
		Vectors []vector                   `json:"vectors"`
	}
	readGzJSON(t, filepath.Join("variants", "variants.json.gz"), &variants)
	for _, v := range variants {
		t.Run(v.Name, func(t *testing.T) {
			data, err := readGz(filepath.Join(testdata, v.Base, "tokenizer.json.gz"))
			if err != nil {
				t.Fatal(err)
			}
			var doc map[string]json.RawMessage
			if err := json.Unmarshal(data, &doc); err != nil {
				t.Fatal(err)
			}
			for k, p := range v.Patch {
				doc[k] = p
			}
			var added []map[string]any
			if err := json.Unmarshal(doc["added_tokens"], &added); err != nil {
				t.Fatal(err)
			}
			for _, a := range added {
				for k, val := range v.Added[a["content"].(string)] {
					a[k] = val
				}
			}
			// The reference fills the template's special-token ids the same way.
			var post map[string]any
			if json.Unmarshal(doc["post_processor"], &post) == nil && post != nil {
				if st, ok := post["special_tokens"].(map[string]any); ok {
					for content, s := range st {
						var ids []any
						for _, a := range added {
							if a["content"] == content {
								ids = append(ids, a["id"])
							}
						}
						s.(map[string]any)["ids"] = ids
					}
					doc["post_processor"], _ = json.Marshal(post)
				}
			}
			doc["added_tokens"], _ = json.Marshal(added)
			patched, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			tk, err := fromJSON(patched, Config{})
			if err != nil {
				t.Fatal(err)
			}
			checkVectors(t, tk, v.Vectors)
		})
	}
}
