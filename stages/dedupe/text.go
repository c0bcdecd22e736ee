package dedupe

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

// The hashes below are fixed functions (FNV-1a, a polynomial over word
// hashes, splitmix64), never seeded per process: which copy survives must
// be the same on every run, and a near duplicate close to the threshold
// must not fall on either side of it by chance.
const (
	fnvOffset = 14695981039346656037
	fnvPrime  = 1099511628211
	// polyBase multiplies word hashes into a window's hash; odd, so the
	// window hash can be rolled.
	polyBase = 0x9E3779B97F4A7C15
)

// mix is splitmix64's finalizer: it spreads every input bit over the output.
func mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xBF58476D1CE4E5B9
	x ^= x >> 27
	x *= 0x94D049BB133111EB
	return x ^ x>>31
}

// fold is text as duplicates are compared: NFKC, so fullwidth forms,
// ligatures and other compatibility characters read as what they stand
// for ("ﬁ" as "fi"), then full Unicode case folding, so "ß", "SS" and
// "ss" are one, as are "ς", "σ" and "Σ", and NFKC again, as folding can
// leave text unnormalised. ASCII, which neither changes but for case, is
// only lowercased.
func fold(s string) string {
	upper := false
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= utf8.RuneSelf:
			// A Caser keeps state between calls, so each call has its own.
			return norm.NFKC.String(cases.Fold().String(norm.NFKC.String(s)))
		case 'A' <= c && c <= 'Z':
			upper = true
		}
	}
	if !upper {
		return s
	}
	return strings.ToLower(s)
}

// exactHash hashes what the target is asked, folded (fold) with runs of
// whitespace made one space: the prompt's messages with their roles and
// tool calls, and the tools offered.
func exactHash(rec *conv.Record) uint64 {
	h := uint64(fnvOffset)
	write := func(s string) {
		for i := 0; i < len(s); i++ {
			h = (h ^ uint64(s[i])) * fnvPrime
		}
	}
	norm := func(s string) {
		write(strings.Join(strings.Fields(fold(s)), " "))
		write("\x00")
	}
	for _, m := range rec.Prompt() {
		norm(m.Role)
		norm(m.Content)
		for _, c := range m.ToolCalls {
			norm(c.Name)
			norm(string(c.Arguments))
		}
		norm(m.ToolCallID)
	}
	write("\x01")
	for _, t := range rec.Tools {
		norm(t.Name)
		norm(t.Description)
		norm(string(t.Parameters))
	}
	return mix(h)
}

// promptText is what n-grams and shingles are read from: the contents of
// the prompt's messages one after the other, so a phrase that runs from
// one message into the next is found as it reads, and the tools offered.
func promptText(rec *conv.Record) []string {
	var parts []string
	for _, m := range rec.Prompt() {
		parts = append(parts, m.Content)
	}
	for _, t := range rec.Tools {
		parts = append(parts, t.Name, t.Description)
	}
	return parts
}

// scanWords calls fn with the byte span of every word of s: a run of
// letters and digits, so whitespace and punctuation make no difference.
// Han, kana and Hangul characters are words of their own, since those
// scripts do not space words.
func scanWords(s string, fn func(from, to int)) {
	from := -1
	for i, r := range s {
		switch {
		case unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
			unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r):
			if from >= 0 {
				fn(from, i)
			}
			fn(i, i+utf8.RuneLen(r))
			from = -1
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if from < 0 {
				from = i
			}
		case from >= 0:
			fn(from, i)
			from = -1
		}
	}
	if from >= 0 {
		fn(from, len(s))
	}
}

// wordHashes appends the hashes of the words of parts to dst, read from
// the folded text (fold), so case and compatibility forms make no
// difference either.
func wordHashes(dst []uint64, parts []string) []uint64 {
	for _, s := range parts {
		s = fold(s)
		scanWords(s, func(from, to int) {
			h := uint64(fnvOffset)
			for _, r := range s[from:to] {
				for ; r > 0; r >>= 8 {
					h = (h ^ uint64(r&0xFF)) * fnvPrime
				}
			}
			dst = append(dst, mix(h))
		})
	}
	return dst
}

// wordsOf returns the words of parts as wordHashes reads them, for showing
// a matched n-gram.
func wordsOf(parts []string) []string {
	var out []string
	for _, s := range parts {
		s = fold(s)
		scanWords(s, func(from, to int) { out = append(out, s[from:to]) })
	}
	return out
}

// eachGram calls fn with the hash of every run of n consecutive words,
// until fn returns false, rolling the hash along so a record costs one
// step a word whatever n is. The hash depends on n, so grams of different
// lengths never collide.
func eachGram(words []uint64, n int, fn func(h uint64, start int) bool) {
	if n <= 0 || len(words) < n {
		return
	}
	var top uint64 = 1 // polyBase^(n-1)
	for range n - 1 {
		top *= polyBase
	}
	var h uint64
	for i, w := range words {
		if i >= n {
			h -= words[i-n] * top
		}
		h = h*polyBase + w
		if i >= n-1 && !fn(mix(h^uint64(n)), i-n+1) {
			return
		}
	}
}
