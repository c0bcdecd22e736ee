// Package tokenizer loads real model tokenizers (Hugging Face tokenizer.json
// and tiktoken rank files) and encodes text with them exactly as the
// reference implementations do, so training data carries the target
// model's own token ids.
package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Tokenizer encodes and decodes text. It is immutable once loaded, apart
// from an internal cache, and safe for concurrent use.
type Tokenizer struct {
	model      *bpe
	normalize  normalizer
	pre        preTokenizer
	added      *addedMatcher // tokens matched in raw text
	addedNorm  *addedMatcher // tokens matched in normalized text
	prefix     []int         // post-processor ids around a single sequence
	suffix     []int
	decoders   []decodeStep
	byteDecode bool     // decode by concatenating raw token bytes
	tokens     []string // id -> token as the vocabulary spells it
	raw        []string // id -> the bytes it stands for on its own
	spell      *strings.Replacer
	special    []bool // id -> is a special added token
	ids        map[string]int
	config     Config
}

// Files a model directory may hold.
const (
	fileTokenizer = "tokenizer.json"
	fileConfig    = "tokenizer_config.json"
	fileTemplate  = "chat_template.jinja"
	fileGenConfig = "generation_config.json"
)

// Load reads a tokenizer from a model directory holding tokenizer.json (or
// tokenizer.json.gz) and, optionally, tokenizer_config.json[.gz],
// generation_config.json[.gz] (for the ids the model stops on) and
// chat_template.jinja. path may also name the tokenizer.json file itself,
// or a tiktoken rank file (see LoadTiktoken).
func Load(path string) (*Tokenizer, error) {
	dir, file := path, ""
	if st, err := os.Stat(path); err == nil && !st.IsDir() {
		dir, file = filepath.Dir(path), path
	} else if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	var cfg Config
	if data, name, err := readMaybeGz(filepath.Join(dir, fileConfig)); err == nil {
		if cfg, err = parseConfig(data); err != nil {
			return nil, fmt.Errorf("load %s: %w", name, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	if data, name, err := readMaybeGz(filepath.Join(dir, fileGenConfig)); err == nil {
		if cfg.EOSTokenIDs, err = parseGenerationConfig(data); err != nil {
			return nil, fmt.Errorf("load %s: %w", name, err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	if cfg.ChatTemplate == "" {
		if data, err := os.ReadFile(filepath.Join(dir, fileTemplate)); err == nil {
			cfg.ChatTemplate = string(data)
		}
	}
	if file == "" {
		file = filepath.Join(dir, fileTokenizer)
		if _, _, err := readMaybeGz(file); errors.Is(err, fs.ErrNotExist) {
			if tk := findTiktoken(dir); tk != "" {
				file = tk
			}
		}
	}
	if isTiktokenFile(file) {
		return loadTiktoken(file, cfg)
	}
	data, name, err := readMaybeGz(file)
	if err != nil {
		return nil, fmt.Errorf("load tokenizer: %w", err)
	}
	t, err := fromJSON(data, cfg)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", name, err)
	}
	return t, nil
}

// readMaybeGz reads path, or path.gz decompressed when path is missing.
func readMaybeGz(path string) ([]byte, string, error) {
	if strings.HasSuffix(path, ".gz") {
		data, err := readGz(path)
		return data, path, err
	}
	data, err := os.ReadFile(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return data, path, err
	}
	if _, serr := os.Stat(path + ".gz"); serr != nil {
		return nil, path, err
	}
	data, err = readGz(path + ".gz")
	return data, path + ".gz", err
}

func readGz(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var buf bytes.Buffer
	// One allocation of the right size beats ReadAll's doubling over tens
	// of megabytes, and a guess short of the size cost a second buffer of
	// twice the first (clearing it was most of loading Qwen3's tokenizer).
	buf.Grow(gzipSize(f) + bytes.MinRead)
	if _, err := buf.ReadFrom(zr); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return buf.Bytes(), nil
}

// gzipSize is the size of f's content once decompressed, from the gzip
// trailer (the size modulo 4 GiB of the last member: a tokenizer file has
// one), or a guess at four times the file's size where that fails or
// claims more than 32 times it (JSON compresses about fourfold; a broken
// trailer must not allocate gigabytes).
func gzipSize(f *os.File) int {
	st, err := f.Stat()
	if err != nil {
		return 0
	}
	guess := int(st.Size()) * 4
	var tail [4]byte
	if st.Size() >= 18 {
		if _, err := f.ReadAt(tail[:], st.Size()-4); err == nil {
			if n := int(binary.LittleEndian.Uint32(tail[:])); n > 0 && n <= 8*guess {
				return n
			}
		}
	}
	return guess
}

// Encode returns the token ids of text. Special-token strings in the text
// become their tokens; addSpecial adds what the post-processor adds around
// a sequence (a BOS token, for most models). Invalid UTF-8 is read as
// U+FFFD, the way Python and Node decode it.
func (t *Tokenizer) Encode(text string, addSpecial bool) []int {
	text = validUTF8(text)
	out := make([]int, 0, len(text)/4+len(t.prefix)+len(t.suffix)+1)
	if addSpecial {
		out = append(out, t.prefix...)
	}
	t.added.split(text, func(seg string, atStart bool) {
		if t.normalize != nil {
			seg = t.normalize(seg)
		}
		t.addedNorm.split(seg, func(s string, first bool) {
			t.pre.split(s, atStart && first, func(piece string, _ bool) { out = t.model.encode(piece, out) })
		}, func(a *addedToken) { out = append(out, a.id) })
	}, func(a *addedToken) { out = append(out, a.id) })
	if addSpecial {
		out = append(out, t.suffix...)
	}
	return out
}

// Count returns the number of tokens Encode would return.
func (t *Tokenizer) Count(text string, addSpecial bool) int {
	return len(t.Encode(text, addSpecial))
}

// Decode returns the text of ids, special tokens included. Ids outside the
// vocabulary are skipped; bytes that do not form UTF-8 become U+FFFD.
func (t *Tokenizer) Decode(ids []int) string {
	if t.byteDecode {
		var b strings.Builder
		for _, id := range ids {
			if id >= 0 && id < len(t.raw) {
				b.WriteString(t.raw[id])
			}
		}
		return validUTF8(b.String())
	}
	toks := make([]string, 0, len(ids))
	for _, id := range ids {
		if id >= 0 && id < len(t.tokens) && t.tokens[id] != "" {
			toks = append(toks, t.tokens[id])
		}
	}
	for _, step := range t.decoders {
		toks = step(toks)
	}
	return validUTF8(strings.Join(toks, ""))
}

// TokenID returns the id of a token as the vocabulary spells it (special
// tokens such as "<|im_end|>" included).
func (t *Tokenizer) TokenID(token string) (int, bool) {
	id, ok := t.ids[token]
	return id, ok
}

// Token returns the vocabulary's spelling of id, or "" when there is none.
func (t *Tokenizer) Token(id int) string {
	if id < 0 || id >= len(t.tokens) {
		return ""
	}
	return t.tokens[id]
}

// IsSpecial reports whether id is a special added token.
func (t *Tokenizer) IsSpecial(id int) bool {
	return id >= 0 && id < len(t.special) && t.special[id]
}

// VocabSize returns one more than the largest token id.
func (t *Tokenizer) VocabSize() int { return len(t.tokens) }

// Config returns what tokenizer_config.json said.
func (t *Tokenizer) Config() Config { return t.config }

// TokenBytes returns the bytes token id stands for on its own: for
// byte-level vocabularies the undone byte mapping, for <0xXX> byte-fallback
// tokens their byte, otherwise the spelling with the decoder's
// replacements (SentencePiece's "▁" as " ").
func (t *Tokenizer) TokenBytes(id int) string {
	if id < 0 || id >= len(t.raw) {
		return ""
	}
	return t.raw[id]
}
