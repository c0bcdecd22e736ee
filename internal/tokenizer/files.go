package tokenizer

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// FilesHash hashes what decides tokenization and chat rendering under each
// path: a model directory's tokenizer and template files (not its weights),
// or a file itself. Another hash means other ids.
func FilesHash(paths ...string) (string, error) {
	h := sha256.New()
	for _, root := range paths {
		var files []string
		err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if d.IsDir() && p != root {
				return filepath.SkipDir
			}
			if !d.IsDir() && (p == root || isTokenizerFile(d.Name())) {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			return "", err
		}
		sort.Strings(files)
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return "", err
			}
			fmt.Fprintf(h, "%s %d\n", filepath.Base(f), len(b))
			h.Write(b)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:12]), nil
}

func isTokenizerFile(name string) bool {
	switch strings.TrimSuffix(name, ".gz") {
	case "tokenizer.json", "tokenizer_config.json", "chat_template.jinja", "chat_template.json",
		"special_tokens_map.json", "tokenizer.model", "tiktoken.model":
		return true
	}
	return strings.HasSuffix(name, ".tiktoken")
}
