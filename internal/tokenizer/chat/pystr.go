package chat

import (
	"strings"
	"unicode"
	"unicode/utf8"

	textcases "golang.org/x/text/cases"
	"golang.org/x/text/language"
)

// Python's str methods, as chat templates run them under Jinja2: what is
// whitespace and how case maps differ from Go's strings package on code
// points a message can hold (U+001C..U+001F are whitespace to Python; "ß"
// is "SS" in upper case; a final capital sigma lowers to "ς").

// pySpace is str.isspace() for one code point: Unicode White_Space plus
// the four information separators U+001C..U+001F, which Python counts as
// whitespace (bidirectional class B or S) and Go's unicode.IsSpace does not.
func pySpace(r rune) bool {
	return unicode.IsSpace(r) || r >= 0x1C && r <= 0x1F
}

// pyStrip is str.strip, lstrip and rstrip: with chars nil, whitespace as
// Python reads it; else every code point of *chars.
func pyStrip(s string, chars *string, left, right bool) string {
	cut := pySpace
	if chars != nil {
		set := *chars
		cut = func(r rune) bool { return strings.ContainsRune(set, r) }
	}
	if left {
		s = strings.TrimLeftFunc(s, cut)
	}
	if right {
		s = strings.TrimRightFunc(s, cut)
	}
	return s
}

// pyIsSpace is str.isspace(): not empty, and whitespace throughout.
func pyIsSpace(s string) bool {
	return s != "" && strings.IndexFunc(s, func(r rune) bool { return !pySpace(r) }) < 0
}

// pyUpper is str.upper(): full case mappings (SpecialCasing's unconditional
// ones, as Python applies), so "ß" becomes "SS" and "ﬁ" "FI".
func pyUpper(s string) string {
	// A Caser keeps state between calls, so each call has its own.
	return textcases.Upper(language.Und).String(s)
}

// pyLower is str.lower(): full lowercase mappings and the final sigma rule.
func pyLower(s string) string {
	var b strings.Builder
	for i, r := range s {
		lowerAt(&b, s, i, r)
	}
	return b.String()
}

// pyTitle is str.title(): a code point after a cased one is lowered, any
// other is titlecased (full mappings: "ǆ" becomes "ǅ", "ß" "Ss").
func pyTitle(s string) string {
	var b strings.Builder
	prevCased := false
	for i, r := range s {
		if prevCased {
			lowerAt(&b, s, i, r)
		} else {
			b.WriteString(titleRune(r))
		}
		prevCased = cased(r)
	}
	return b.String()
}

// pyCapitalize is str.capitalize(): the first code point titlecased, the
// rest lowered (the final sigma rule reading the whole string).
func pyCapitalize(s string) string {
	if s == "" {
		return s
	}
	r, n := utf8.DecodeRuneInString(s)
	var b strings.Builder
	b.WriteString(titleRune(r))
	for i, r := range s[n:] {
		lowerAt(&b, s, n+i, r)
	}
	return b.String()
}

// jinjaTitle is Jinja2's title filter, which is not str.title(): the text
// is cut before each word, a word starting after a run of whitespace or
// any of "-({[<", and each piece is its first code point upper-cased and
// the rest lowered on its own (so the final sigma rule sees that rest only).
func jinjaTitle(s string) string {
	var b strings.Builder
	boundary := func(r rune) bool { return pySpace(r) || strings.ContainsRune("-({[<", r) }
	for s != "" {
		// A piece is a run of boundary code points or a run of others.
		r, _ := utf8.DecodeRuneInString(s)
		in := boundary(r)
		end := strings.IndexFunc(s, func(r rune) bool { return boundary(r) != in })
		if end < 0 {
			end = len(s)
		}
		piece := s[:end]
		first, n := utf8.DecodeRuneInString(piece)
		b.WriteString(pyUpper(string(first)))
		b.WriteString(pyLower(piece[n:]))
		s = s[end:]
	}
	return b.String()
}

// titleRune is r's full titlecase mapping.
func titleRune(r rune) string {
	if r < utf8.RuneSelf {
		return string(unicode.ToUpper(r))
	}
	return textcases.Title(language.Und, textcases.NoLower).String(string(r))
}

// lowerAt writes the lowercase of r, found at byte i of s: its full
// mapping ("İ" is "i̇", the only unconditional one longer than a code
// point), and for a capital sigma the final form when it ends a word.
func lowerAt(b *strings.Builder, s string, i int, r rune) {
	switch r {
	case 'İ':
		b.WriteString("i\u0307")
	case 'Σ':
		if finalSigma(s, i) {
			b.WriteRune('ς')
		} else {
			b.WriteRune('σ')
		}
	default:
		b.WriteRune(unicode.ToLower(r))
	}
}

// finalSigma is Unicode's Final_Sigma condition for the sigma at byte i of
// s, as CPython tests it: a cased letter before it and none after it,
// case-ignorable code points skipped either way.
func finalSigma(s string, i int) bool {
	before := s[:i]
	for before != "" {
		r, n := utf8.DecodeLastRuneInString(before)
		if !caseIgnorable(r) {
			if !cased(r) {
				return false
			}
			break
		}
		before = before[:len(before)-n]
	}
	if before == "" {
		return false
	}
	for _, r := range s[i+len("Σ"):] {
		if !caseIgnorable(r) {
			return !cased(r)
		}
	}
	return true
}

// cased is Unicode's Cased property: upper, lower or title case letters
// and the other code points with case (Ⓐ, ª, modifier letters such as ʰ).
func cased(r rune) bool {
	return unicode.In(r, unicode.Lu, unicode.Ll, unicode.Lt, unicode.Other_Lowercase, unicode.Other_Uppercase)
}

// caseIgnorable is Unicode's Case_Ignorable property: marks, format
// characters, modifiers, and the apostrophes, periods and colons that
// may sit inside a word (Word_Break MidLetter, MidNumLet, Single_Quote).
func caseIgnorable(r rune) bool {
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk) ||
		strings.ContainsRune("'.:\u00b7\u0387\u055f\u05f4\u2018\u2019\u2024\u2027\ufe13\ufe52\ufe55\uff07\uff0e\uff1a", r)
}
