package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"
)

// A decodeStep is one of HF's decoders: it rewrites the list of token
// strings on its way back to text.
type decodeStep func(tokens []string) []string

// byteLevelChars maps GPT-2's printable stand-ins (all below U+0144) back
// to the bytes they encode, -1 for runes that stand for none;
// byteLevelRunes is the forward mapping.
var (
	byteLevelChars [0x144]int16
	byteLevelRunes [256]rune
)

func init() {
	for i := range byteLevelChars {
		byteLevelChars[i] = -1
	}
	n := rune(0)
	for b := 0; b < 256; b++ {
		r := rune(b)
		if !(b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE && b <= 0xFF) {
			r = 256 + n
			n++
		}
		byteLevelRunes[b] = r
		byteLevelChars[r] = int16(b)
	}
}

// unByteLevel returns the bytes a byte-level token stands for; a token with
// a rune outside the mapping (an added token like <｜User｜>) stands for its
// own UTF-8, as HF's ByteLevel decoder treats it.
func unByteLevel(tok string) (string, bool) {
	var buf [64]byte
	b := buf[:0]
	for _, r := range tok {
		if r >= rune(len(byteLevelChars)) || byteLevelChars[r] < 0 {
			return tok, false
		}
		b = append(b, byte(byteLevelChars[r]))
	}
	return string(b), true
}

// decoderInfo is what the chain tells about single tokens: whether it is
// byte-level, and which replacements (old, new, ...) spell a token as text,
// as "▁" becomes " " in SentencePiece vocabularies.
type decoderInfo struct {
	byteLevel    bool
	replacements []string
}

// buildDecoder builds the decoder chain.
func buildDecoder(raw json.RawMessage, info *decoderInfo) ([]decodeStep, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("decoder: %w", err)
	}
	switch c.Type {
	case "Sequence":
		var steps []decodeStep
		for _, r := range c.Decoders {
			s, err := buildDecoder(r, info)
			if err != nil {
				return nil, err
			}
			steps = append(steps, s...)
		}
		return steps, nil
	case "ByteLevel":
		info.byteLevel = true
		return nil, nil
	case "Replace":
		if c.Pattern.String == nil {
			return nil, fmt.Errorf("decoder Replace: only String patterns are supported")
		}
		old, with := *c.Pattern.String, c.Content
		info.replacements = append(info.replacements, old, with)
		return []decodeStep{func(toks []string) []string {
			for i, t := range toks {
				toks[i] = strings.ReplaceAll(t, old, with)
			}
			return toks
		}}, nil
	case "ByteFallback":
		return []decodeStep{byteFallbackDecode}, nil
	case "Fuse":
		return []decodeStep{func(toks []string) []string { return []string{strings.Join(toks, "")} }}, nil
	case "Strip":
		content, start, stop := c.Content, c.Start, c.Stop
		return []decodeStep{func(toks []string) []string {
			for i, t := range toks {
				for k := 0; k < start && strings.HasPrefix(t, content); k++ {
					t = t[len(content):]
				}
				for k := 0; k < stop && strings.HasSuffix(t, content); k++ {
					t = t[:len(t)-len(content)]
				}
				toks[i] = t
			}
			return toks
		}}, nil
	case "Metaspace":
		rep := c.Replacement
		info.replacements = append(info.replacements, rep, " ")
		prepend := c.PrependScheme != "never" && (c.PrependScheme != "" || c.AddPrefixSpace)
		return []decodeStep{func(toks []string) []string {
			for i, t := range toks {
				t = strings.ReplaceAll(t, rep, " ")
				if i == 0 && prepend {
					t = strings.TrimPrefix(t, " ")
				}
				toks[i] = t
			}
			return toks
		}}, nil
	}
	return nil, fmt.Errorf("decoder: unsupported type %q", c.Type)
}

// byteFallbackDecode turns runs of <0xXX> tokens into their text, or one
// U+FFFD per byte when the run is not valid UTF-8.
func byteFallbackDecode(toks []string) []string {
	out := toks[:0:0]
	var pending []byte
	flush := func() {
		if len(pending) == 0 {
			return
		}
		if utf8.Valid(pending) {
			out = append(out, string(pending))
		} else {
			for range pending {
				out = append(out, "\uFFFD")
			}
		}
		pending = pending[:0]
	}
	for _, t := range toks {
		if b, ok := fallbackByte(t); ok {
			pending = append(pending, b)
			continue
		}
		flush()
		out = append(out, t)
	}
	flush()
	return out
}

func fallbackByte(t string) (byte, bool) {
	if len(t) != 6 || !strings.HasPrefix(t, "<0x") || t[5] != '>' {
		return 0, false
	}
	var b byte
	for _, c := range []byte(t[3:5]) {
		switch {
		case c >= '0' && c <= '9':
			b = b<<4 | (c - '0')
		case c >= 'A' && c <= 'F':
			b = b<<4 | (c - 'A' + 10)
		case c >= 'a' && c <= 'f':
			b = b<<4 | (c - 'a' + 10)
		default:
			return 0, false
		}
	}
	return b, true
}
