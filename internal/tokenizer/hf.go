package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
)

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
