package conv

import (
	"sync"
	"unicode/utf8"
)

// keyBufs keeps ContentKey's buffers: one per record loaded was a tenth of
// a load's allocations.
var keyBufs = sync.Pool{New: func() any { return new([]byte) }}

// appendKeyJSON appends what ContentKey's json.Encoder writes for a
// conversation of plain text messages and no tools, the bulk of every
// dataset: the encoder's reflection was a third of a JSONL load. It is
// false, having appended some perhaps, for anything else (tool calls,
// tools, spelt content, or text the encoder would escape), which the
// encoder is left to write.
func appendKeyJSON(dst []byte, messages []Message, tools []ToolDef) ([]byte, bool) {
	if tools != nil || messages == nil {
		return dst, false
	}
	dst = append(dst, '[')
	for i, m := range messages {
		if m.NullContent || m.Parts != nil || m.ToolCalls != nil {
			return dst, false
		}
		if i > 0 {
			dst = append(dst, ',')
		}
		var ok bool
		if dst, ok = appendField(dst, `{"role":`, m.Role, false); !ok {
			return dst, false
		}
		if dst, ok = appendField(dst, `,"content":`, m.Content, false); !ok {
			return dst, false
		}
		if dst, ok = appendField(dst, `,"reasoning":`, m.Reasoning, true); !ok {
			return dst, false
		}
		if dst, ok = appendField(dst, `,"tool_call_id":`, m.ToolCallID, true); !ok {
			return dst, false
		}
		if dst, ok = appendField(dst, `,"name":`, m.Name, true); !ok {
			return dst, false
		}
		dst = append(dst, '}')
	}
	return append(dst, "]\nnull\n"...), true
}

// appendField appends a member whose string value the encoder writes as
// is, leaving it out when empty if omitEmpty; it is false for a string the
// encoder would escape.
func appendField(dst []byte, prefix, s string, omitEmpty bool) ([]byte, bool) {
	if omitEmpty && s == "" {
		return dst, true
	}
	if !verbatim(s) {
		return dst, false
	}
	dst = append(dst, prefix...)
	dst = append(dst, '"')
	dst = append(dst, s...)
	return append(dst, '"'), true
}

// verbatim reports whether encoding/json writes s between quotes unchanged:
// valid UTF-8 without control characters (DEL included), quotes,
// backslashes, the HTML characters it escapes (<, >, &) or U+2028 and
// U+2029. Printable ASCII is passed over eight bytes at a time: byte by
// byte this was a fifth of ContentKey.
func verbatim(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
			uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
		if x&highBits != 0 || below(x, 0x20) || hasByte(x, 0x7f) || hasByte(x, '"') || hasByte(x, '\\') ||
			hasByte(x, '<') || hasByte(x, '>') || hasByte(x, '&') {
			break
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; notPlain[c] {
			return c >= utf8.RuneSelf && verbatimUTF8(s[i:])
		}
	}
	return true
}

// notPlain marks the bytes that are not printable ASCII written as is.
var notPlain = func() (t [256]bool) {
	for c := range t {
		t[c] = c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&'
	}
	return t
}()

// verbatimUTF8 is verbatim for text past its first non-ASCII byte.
func verbatimUTF8(s string) bool {
	for _, r := range s {
		if r < utf8.RuneSelf && notPlain[r] || r == utf8.RuneError || r == '\u2028' || r == '\u2029' {
			return false
		}
	}
	return true
}

// Bytes of eight at once: highBits has the top bit of each byte set.
const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// below reports whether a byte of x is under n (n <= 0x80), for x of
// ASCII bytes only.
func below(x uint64, n byte) bool { return (x-lowBits*uint64(n))&^x&highBits != 0 }

// hasByte reports whether a byte of x is c.
func hasByte(x uint64, c byte) bool { return below(x^(lowBits*uint64(c)), 1) }
