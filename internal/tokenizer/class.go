package tokenizer

import (
	"sync"
	"unicode"
	"unicode/utf8"
)

// Character classes the known pre-tokenizer patterns are written in. ASCII
// answers from a table; the rest asks package unicode.
const (
	cL     = 1 << iota // \p{L}
	cN                 // \p{N}
	cS                 // \s (White_Space)
	cNL                // [\r\n]
	cP                 // \p{P}
	cSym               // \p{S}
	cM                 // \p{M}
	cUpper             // [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]
	cLower             // [\p{Ll}\p{Lm}\p{Lo}\p{M}]
	cHan               // \p{Han}
)

// bmpClass caches the classes of the Basic Multilingual Plane, filled on
// the first Load: a table read is several times faster than the unicode
// range searches, and most text never leaves the BMP.
var (
	bmpClass     [0x10000]uint16
	fillBMPClass = sync.OnceFunc(func() {
		for r := range rune(len(bmpClass)) {
			bmpClass[r] = slowClass(r)
		}
	})
)

func slowClass(r rune) uint16 {
	var c uint16
	if unicode.IsLetter(r) {
		c |= cL
	}
	if unicode.IsNumber(r) {
		c |= cN
	}
	if unicode.Is(unicode.White_Space, r) {
		c |= cS
	}
	if r == '\r' || r == '\n' {
		c |= cNL
	}
	if unicode.IsPunct(r) {
		c |= cP
	}
	if unicode.IsSymbol(r) {
		c |= cSym
	}
	if unicode.IsMark(r) {
		c |= cM
	}
	if unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M) {
		c |= cUpper
	}
	if unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M) {
		c |= cLower
	}
	if unicode.Is(unicode.Han, r) {
		c |= cHan
	}
	return c
}

func class(r rune) uint16 {
	if r >= 0 && r < rune(len(bmpClass)) {
		return bmpClass[r]
	}
	return slowClass(r)
}

// at decodes the rune at s[i:]; past the end it returns (-1, 0), which is in
// no class.
func at(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

// classAt returns the class bits and width of the rune at s[i:].
func classAt(s string, i int) (uint16, int) {
	r, w := at(s, i)
	if w == 0 {
		return 0, 0
	}
	return class(r), w
}

// span returns the byte length of the longest run at s[i:] of runes having
// some bit of want (any rune when want is 0) and no bit of avoid.
func span(s string, i int, want, avoid uint16) int {
	j := i
	for {
		c, w := classAt(s, j)
		if w == 0 || want != 0 && c&want == 0 || c&avoid != 0 {
			return j - i
		}
		j += w
	}
}

// run returns the byte length of the longest run at s[i:] of runes having
// any of the bits in want.
func run(s string, i int, want uint16) int { return span(s, i, want, 0) }

// runNot returns the byte length of the longest run at s[i:] of runes having
// none of the bits in avoid.
func runNot(s string, i int, avoid uint16) int { return span(s, i, 0, avoid) }

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at s[i:], or the same
// case-sensitively, returning its byte length or 0. Case folding follows
// Unicode: U+017F LATIN SMALL LETTER LONG S folds to s.
func contraction(s string, i int, fold bool) int {
	if i >= len(s) || s[i] != '\'' {
		return 0
	}
	lower := func(j int) (byte, int) {
		if j >= len(s) {
			return 0, 0
		}
		c := s[j]
		if fold {
			if c >= 'A' && c <= 'Z' {
				c += 'a' - 'A'
			} else if c == 0xC5 && j+1 < len(s) && s[j+1] == 0xBF {
				return 's', 2
			}
		}
		return c, 1
	}
	c1, w1 := lower(i + 1)
	switch c1 {
	case 's', 't', 'm', 'd':
		return 1 + w1
	case 'r', 'v', 'l':
		c2, w2 := lower(i + 1 + w1)
		if (c1 == 'r' || c1 == 'v') && c2 == 'e' || c1 == 'l' && c2 == 'l' {
			return 1 + w1 + w2
		}
	}
	return 0
}

// whitespace matches \s*[\r\n]+|\s+(?!\S)|\s+ at s[i:] (withNewline) or
// \s+(?!\S)|\s+ (without), returning the byte length or 0.
func whitespace(s string, i int, withNewline bool) int {
	end, lastNL, lastStart, count := i, -1, i, 0
	for {
		c, w := classAt(s, end)
		if w == 0 || c&cS == 0 {
			break
		}
		if c&cNL != 0 {
			lastNL = end + w
		}
		lastStart = end
		end += w
		count++
	}
	switch {
	case count == 0:
		return 0
	case withNewline && lastNL >= 0:
		return lastNL - i
	case end == len(s) || count == 1:
		return end - i
	default:
		return lastStart - i
	}
}

// upTo returns the byte length of at most n runes of class want at s[i:].
func upTo(s string, i int, want uint16, n int) int {
	j := i
	for k := 0; k < n; k++ {
		c, w := classAt(s, j)
		if w == 0 || c&want == 0 {
			break
		}
		j += w
	}
	return j - i
}
