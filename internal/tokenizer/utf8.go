package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// validUTF8 replaces each maximal invalid subsequence of s with U+FFFD, the
// way Python's errors="replace", Rust's from_utf8_lossy and WHATWG decoders
// do, so invalid input tokenizes as the reference sees it. Go's own
// strings.ToValidUTF8 collapses whole runs instead.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 8)
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			b.WriteByte(c)
			i++
			continue
		}
		if r, w := utf8.DecodeRuneInString(s[i:]); r != utf8.RuneError || w > 1 {
			b.WriteString(s[i : i+w])
			i += w
			continue
		}
		b.WriteRune(utf8.RuneError)
		i += invalidPrefix(s[i:])
	}
	return b.String()
}

// invalidPrefix returns the length of the maximal subpart at the start of s
// that begins a well-formed sequence but does not finish it (at least 1).
func invalidPrefix(s string) int {
	c := s[0]
	var n int
	lo, hi := byte(0x80), byte(0xBF)
	switch {
	case c >= 0xC2 && c <= 0xDF:
		n = 2
	case c == 0xE0:
		n, lo = 3, 0xA0
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		n = 3
	case c == 0xED:
		n, hi = 3, 0x9F
	case c == 0xF0:
		n, lo = 4, 0x90
	case c >= 0xF1 && c <= 0xF3:
		n = 4
	case c == 0xF4:
		n, hi = 4, 0x8F
	default:
		return 1
	}
	i := 1
	for ; i < n && i < len(s); i++ {
		if s[i] < lo || s[i] > hi {
			return i
		}
		lo, hi = 0x80, 0xBF
	}
	return i
}
