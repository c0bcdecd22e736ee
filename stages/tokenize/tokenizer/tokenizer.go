// Package tokenizer loads real model tokenizers (Hugging Face tokenizer.json
// and tiktoken rank files) and encodes text with them exactly as the
// reference implementations do, so training data carries the target
// model's own token ids.
package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
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
)

// Load reads a tokenizer from a model directory holding tokenizer.json (or
// tokenizer.json.gz) and, optionally, tokenizer_config.json[.gz] and
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
	if st, err := f.Stat(); err == nil {
		// Tokenizer files compress about fourfold; one allocation beats
		// ReadAll's doubling over tens of megabytes.
		buf.Grow(int(st.Size()) * 5)
	}
	if _, err := buf.ReadFrom(zr); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return buf.Bytes(), nil
}

// fromJSON builds a tokenizer from the contents of a tokenizer.json.
func fromJSON(data []byte, cfg Config) (*Tokenizer, error) {
	fillBMPClass()
	var f hfFile
	err := json.Unmarshal(data, &f)
	if err != nil {
		return nil, err
	}
	model := f.Model
	if err := checkModel(&model); err != nil {
		return nil, err
	}
	if model.Vocab, err = parseVocab(model.RawVocab); err != nil {
		return nil, err
	}
	t := &Tokenizer{config: cfg}
	byteLevel := false
	if t.normalize, err = buildNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if t.pre, err = buildPreTokenizer(f.PreTokenizer, &byteLevel); err != nil {
		return nil, err
	}
	var dec decoderInfo
	if t.decoders, err = buildDecoder(f.Decoder, &dec); err != nil {
		return nil, err
	}
	t.byteDecode = dec.byteLevel && len(t.decoders) == 0
	if dec.byteLevel && !t.byteDecode {
		return nil, fmt.Errorf("decoder: ByteLevel combined with other decoders is not supported")
	}
	byteLevel = byteLevel || dec.byteLevel
	t.spell = strings.NewReplacer(dec.replacements...)
	if t.prefix, t.suffix, err = buildPost(f.PostProcessor); err != nil {
		return nil, err
	}
	size := 0
	for _, id := range model.Vocab {
		size = max(size, id+1)
	}
	for _, a := range f.AddedTokens {
		if a.ID < 0 {
			return nil, fmt.Errorf("added token %q: negative id %d", a.Content, a.ID)
		}
		size = max(size, a.ID+1)
	}
	t.tokens = make([]string, size)
	t.raw = make([]string, size)
	t.special = make([]bool, size)
	t.ids = model.Vocab
	// The merge table and the id tables are independent; building them
	// at once cuts load time by about a third on two cores.
	var mergeErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		var merges [][2]string
		if merges, mergeErr = parseMerges(model.Merges); mergeErr == nil {
			t.model, mergeErr = buildBPE(&model, merges, byteLevel)
		}
	}()
	for tok, id := range model.Vocab {
		t.setToken(id, tok, byteLevel)
	}
	<-done
	if mergeErr != nil {
		return nil, mergeErr
	}
	var plain, normed []*addedToken
	for _, a := range f.AddedTokens {
		t.setToken(a.ID, a.Content, byteLevel)
		t.ids[a.Content] = a.ID
		t.special[a.ID] = a.Special
		tok := &addedToken{id: a.ID, content: a.Content, special: a.Special, singleWord: a.SingleWord, lstrip: a.LStrip, rstrip: a.RStrip}
		if a.Normalized && !a.Special {
			if t.normalize != nil {
				tok.content = t.normalize(tok.content)
			}
			normed = append(normed, tok)
		} else {
			plain = append(plain, tok)
		}
	}
	t.added, t.addedNorm = newAddedMatcher(plain), newAddedMatcher(normed)
	return t, nil
}

func (t *Tokenizer) setToken(id int, tok string, byteLevel bool) {
	t.tokens[id] = tok
	switch b, ok := fallbackByte(tok); {
	case byteLevel:
		t.raw[id], _ = unByteLevel(tok)
	case ok:
		t.raw[id] = string([]byte{b})
	default:
		t.raw[id] = t.spell.Replace(tok)
	}
}

func buildBPE(mod *hfModel, merges [][2]string, byteLevel bool) (*bpe, error) {
	m := &bpe{
		vocab:        make(map[string]int32, len(mod.Vocab)),
		merges:       make(map[uint64]merge, len(merges)),
		byteLevel:    byteLevel,
		byteFallback: mod.ByteFallback,
		fuseUnk:      mod.FuseUnk,
		ignoreMerges: mod.IgnoreMerges,
		unk:          -1,
		cache:        newPieceCache(),
	}
	for tok, id := range mod.Vocab {
		if byteLevel {
			raw, ok := unByteLevel(tok)
			if !ok {
				continue
			}
			tok = raw
		}
		m.vocab[tok] = int32(id)
	}
	for b := range 256 {
		m.byteIDs[b], m.fallbackIDs[b] = -1, -1
		if id, ok := m.vocab[string([]byte{byte(b)})]; ok && byteLevel {
			m.byteIDs[b] = id
		}
		if id, ok := mod.Vocab[fmt.Sprintf("<0x%02X>", b)]; ok {
			m.fallbackIDs[b] = int32(id)
		}
	}
	if mod.UnkToken != nil {
		id, ok := mod.Vocab[*mod.UnkToken]
		if !ok {
			return nil, fmt.Errorf("model BPE: unk_token %q is not in the vocabulary", *mod.UnkToken)
		}
		m.unk = int32(id)
	}
	for rank, p := range merges {
		a, okA := mod.Vocab[p[0]]
		b, okB := mod.Vocab[p[1]]
		c, okC := mod.Vocab[p[0]+p[1]]
		if !okA || !okB || !okC {
			return nil, fmt.Errorf("model BPE: merge %d %q + %q uses a token not in the vocabulary", rank, p[0], p[1])
		}
		m.merges[pairKey(int32(a), int32(b))] = merge{rank: int32(rank), id: int32(c)}
	}
	return m, nil
}

// buildPost reads the post-processor as the ids it puts before and after a
// single sequence.
func buildPost(raw json.RawMessage) (prefix, suffix []int, err error) {
	if isNull(raw) {
		return nil, nil, nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, nil, fmt.Errorf("post_processor: %w", err)
	}
	switch c.Type {
	case "Sequence":
		for _, r := range c.Processors {
			p, s, err := buildPost(r)
			if err != nil {
				return nil, nil, err
			}
			prefix, suffix = append(prefix, p...), append(suffix, s...)
		}
		return prefix, suffix, nil
	case "ByteLevel":
		return nil, nil, nil
	case "TemplateProcessing":
		seen := false
		for _, p := range c.Single {
			switch {
			case p.Sequence != nil:
				seen = true
			case p.SpecialToken != nil:
				st, ok := c.SpecialTokens[p.SpecialToken.ID]
				if !ok {
					return nil, nil, fmt.Errorf("post_processor TemplateProcessing: special token %q not defined", p.SpecialToken.ID)
				}
				if seen {
					suffix = append(suffix, st.IDs...)
				} else {
					prefix = append(prefix, st.IDs...)
				}
			}
		}
		return prefix, suffix, nil
	case "BertProcessing", "RobertaProcessing":
		var ids [2]int
		for i, r := range [][]json.RawMessage{c.Cls, c.Sep} {
			if len(r) != 2 || json.Unmarshal(r[1], &ids[i]) != nil {
				return nil, nil, fmt.Errorf("post_processor %s: malformed cls/sep", c.Type)
			}
		}
		return []int{ids[0]}, []int{ids[1]}, nil
	}
	return nil, nil, fmt.Errorf("post_processor: unsupported type %q", c.Type)
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
