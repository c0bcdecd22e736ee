package tokenizer

import "fmt"

func findTiktoken(dir string) string { return "" }

func isTiktokenFile(path string) bool { return false }

func loadTiktoken(path string, cfg Config) (*Tokenizer, error) {
	return nil, fmt.Errorf("load %s: tiktoken files are not supported yet", path)
}
