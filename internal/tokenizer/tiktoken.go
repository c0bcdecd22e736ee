package tokenizer

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TiktokenSpec says how to read a tiktoken rank file, which holds only
// the ranks: the split pattern and the special tokens come from elsewhere
// (tiktoken's registry, a model's code or its tokenizer_config.json).
type TiktokenSpec struct {
	// Pattern is the pre-tokenizer regex; it must be one of the known
	// patterns or RE2-compatible.
	Pattern string
	// Special maps special-token strings to their ids. Every one of them
	// in the text is read as the special token.
	Special map[string]int
}

// knownTiktoken are the specs of rank files known by name.
var knownTiktoken = map[string]TiktokenSpec{
	"o200k_base": {Pattern: patO200K, Special: map[string]int{"<|endoftext|>": 199999, "<|endofprompt|>": 200018}},
	"cl100k_base": {Pattern: patCL100K, Special: map[string]int{"<|endoftext|>": 100257, "<|fim_prefix|>": 100258,
		"<|fim_middle|>": 100259, "<|fim_suffix|>": 100260, "<|endofprompt|>": 100276}},
}

// kimiModelFile is Kimi-K2's rank file; its pattern lives in the model's
// Python code, its special tokens in tokenizer_config.json.
const kimiModelFile = "tiktoken.model"

// findTiktoken returns the rank file in dir, or "".
func findTiktoken(dir string) string {
	if _, err := os.Stat(filepath.Join(dir, kimiModelFile)); err == nil {
		return filepath.Join(dir, kimiModelFile)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "*.tiktoken*"))
	if len(matches) == 1 {
		return matches[0]
	}
	return ""
}

func isTiktokenFile(path string) bool {
	base := filepath.Base(path)
	return base == kimiModelFile || strings.HasSuffix(base, ".tiktoken") || strings.HasSuffix(base, ".tiktoken.gz")
}

// loadTiktoken loads a rank file whose spec follows from its name: a known
// encoding (o200k_base, cl100k_base) or Kimi-K2's tiktoken.model.
func loadTiktoken(path string, cfg Config) (*Tokenizer, error) {
	name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(path), ".gz"), ".tiktoken")
	spec, ok := knownTiktoken[name]
	if name == kimiModelFile {
		spec, ok = TiktokenSpec{Pattern: patKimiK2, Special: cfg.AddedTokens}, true
	}
	if !ok {
		return nil, fmt.Errorf("load %s: unknown tiktoken encoding %q; use LoadTiktoken with its pattern", path, name)
	}
	t, err := LoadTiktoken(path, spec)
	if err != nil {
		return nil, err
	}
	t.config = cfg
	return t, nil
}

// maxTiktokenRank bounds a rank file's ranks: the largest vocabularies
// hold about a million tokens.
const maxTiktokenRank = 1 << 22

// LoadTiktoken reads a tiktoken rank file (base64 token, space, rank per
// line; path.gz is read when path is missing).
func LoadTiktoken(path string, spec TiktokenSpec) (*Tokenizer, error) {
	fillBMPClass()
	data, name, err := readMaybeGz(path)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	pat, err := compilePattern(spec.Pattern)
	if err != nil {
		return nil, fmt.Errorf("load %s: unsupported pattern %q: %v", name, spec.Pattern, err)
	}
	m := &bpe{vocab: map[string]int32{}, merges: map[uint64]merge{}, byteLevel: true, ignoreMerges: true, unk: -1, cache: newPieceCache()}
	var tokens []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; sc.Scan(); line++ {
		text := strings.TrimSpace(sc.Text())
		if text == "" {
			continue
		}
		b64, rankText, ok := strings.Cut(text, " ")
		tok, err1 := base64.StdEncoding.DecodeString(b64)
		rank, err2 := strconv.Atoi(rankText)
		if !ok || err1 != nil || err2 != nil || rank < 0 {
			return nil, fmt.Errorf("load %s: line %d is not \"base64 rank\"", name, line)
		}
		if rank > maxTiktokenRank {
			// Ranks are dense from 0: a huge one is a broken file, and
			// would make the token table that large.
			return nil, fmt.Errorf("load %s: line %d has rank %d; a rank file's ranks run from 0 to its vocabulary size (at most %d)", name, line, rank, maxTiktokenRank)
		}
		for len(tokens) <= rank {
			tokens = append(tokens, "")
		}
		tokens[rank] = string(tok)
		m.vocab[string(tok)] = int32(rank)
	}
	// tiktoken merges the adjacent pair whose concatenation ranks lowest;
	// as a merge table, every split of a token into two tokens is a merge
	// of that token's rank.
	for rank, tok := range tokens {
		for k := 1; k < len(tok); k++ {
			a, okA := m.vocab[tok[:k]]
			b, okB := m.vocab[tok[k:]]
			if okA && okB {
				m.merges[pairKey(a, b)] = merge{rank: int32(rank), id: int32(rank)}
			}
		}
	}
	for b := range 256 {
		m.byteIDs[b], m.fallbackIDs[b] = -1, -1
		if id, ok := m.vocab[string([]byte{byte(b)})]; ok {
			m.byteIDs[b] = id
		}
	}
	size := len(tokens)
	for _, id := range spec.Special {
		size = max(size, id+1)
	}
	t := &Tokenizer{model: m, pre: splitter{pattern: pat}, byteDecode: true, ids: map[string]int{}}
	t.tokens = make([]string, size)
	t.raw = make([]string, size)
	t.special = make([]bool, size)
	for id, tok := range tokens {
		t.raw[id] = tok
		t.tokens[id] = byteLevelSpelling(tok)
		t.ids[t.tokens[id]] = id
	}
	var specials []*addedToken
	for s, id := range spec.Special {
		if id < 0 {
			return nil, fmt.Errorf("load %s: special token %q has negative id %d", name, s, id)
		}
		t.tokens[id], t.raw[id], t.special[id], t.ids[s] = s, s, true, id
		specials = append(specials, &addedToken{id: id, content: s, special: true})
	}
	t.added = newAddedMatcher(specials)
	return t, nil
}

// byteLevelSpelling spells raw token bytes as GPT-2's byte-level alphabet
// does, the form Hugging Face vocabularies use.
func byteLevelSpelling(raw string) string {
	var b strings.Builder
	for i := 0; i < len(raw); i++ {
		b.WriteRune(byteLevelRunes[raw[i]])
	}
	return b.String()
}
