package tokenizer

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// A finder locates the first match of a Split pattern at or after s[i:],
// returning its bounds or (-1, -1).
type finder interface {
	find(s string, i int) (start, end int)
}

// scanner matches a pattern anchored at s[i:], returning the byte length of
// the match or 0. Hand-written scanners replace the regexes of real
// tokenizers: Go's RE2 cannot express their lookahead (\s+(?!\S)) or
// class intersection, and a scanner runs in linear time, several times faster
// than a regex engine.
type scanner func(s string, i int) int

func (f scanner) find(s string, i int) (int, int) {
	for i < len(s) {
		if n := f(s, i); n > 0 {
			return i, i + n
		}
		_, w := at(s, i)
		i += w
	}
	return -1, -1
}

// Patterns of real tokenizers, exactly as their tokenizer.json spells them.
const (
	patGPT2    = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	patCL100K  = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patQwen2   = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patO200K   = `[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patKimiK2  = `[\p{Han}]+|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]+[\p{Ll}\p{Lm}\p{Lo}\p{M}&&[^\p{Han}]]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	patDigits3 = `\p{N}{1,3}`
	patDSCJK   = "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+"
	patDSMain  = "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
)

// knownPatterns maps each recognised regex to its scanner.
var knownPatterns = map[string]scanner{
	patGPT2:    scanGPT2,
	patCL100K:  scanCL100K(3),
	patQwen2:   scanCL100K(1),
	patO200K:   scanO200K(false),
	patKimiK2:  scanO200K(true),
	patDigits3: func(s string, i int) int { return upTo(s, i, cN, 3) },
	patDSCJK:   scanDSCJK,
	patDSMain:  scanDSMain,
}

// compilePattern returns the finder for a Split regex: a scanner when the
// pattern is a known one, else Go's regexp when RE2 accepts it (leftmost-first
// alternation agrees with backtracking engines when there is no lookaround).
func compilePattern(re string) (finder, error) {
	if f, ok := knownPatterns[re]; ok {
		return f, nil
	}
	rx, err := regexp.Compile(re)
	if err != nil {
		return nil, err
	}
	return regexpFinder{rx}, nil
}

type regexpFinder struct{ rx *regexp.Regexp }

func (f regexpFinder) find(s string, i int) (int, int) {
	for i <= len(s) {
		loc := f.rx.FindStringIndex(s[i:])
		if loc == nil {
			return -1, -1
		}
		if loc[1] > loc[0] {
			return i + loc[0], i + loc[1]
		}
		// An empty match splits nothing; look past it.
		_, w := utf8.DecodeRuneInString(s[i+loc[0]:])
		i += loc[0] + max(w, 1)
	}
	return -1, -1
}

// literalFinder finds a plain string (a Split or Replace "String" pattern).
type literalFinder string

func (f literalFinder) find(s string, i int) (int, int) {
	if f == "" {
		return -1, -1
	}
	k := strings.Index(s[i:], string(f))
	if k < 0 {
		return -1, -1
	}
	return i + k, i + k + len(f)
}

// scanGPT2 is patGPT2, the ByteLevel pre-tokenizer's own regex.
func scanGPT2(s string, i int) int {
	if n := contraction(s, i, false); n > 0 {
		return n
	}
	r0, w0 := at(s, i)
	for _, want := range []uint16{cL, cN} {
		if r0 == ' ' {
			if n := run(s, i+1, want); n > 0 {
				return 1 + n
			}
		}
		if n := run(s, i, want); n > 0 {
			return n
		}
	}
	if r0 == ' ' {
		if n := runNot(s, i+1, cS|cL|cN); n > 0 {
			return 1 + n
		}
	}
	if n := runNot(s, i, cS|cL|cN); n > 0 {
		return n
	}
	if n := whitespace(s, i, false); n > 0 {
		return n
	}
	return w0
}

// scanCL100K is patCL100K with \p{N}{1,maxDigits}: Llama 3 (3) and Qwen 2/3 (1).
func scanCL100K(maxDigits int) scanner {
	return func(s string, i int) int {
		if n := contraction(s, i, true); n > 0 {
			return n
		}
		c0, w0 := classAt(s, i)
		if c0&cL != 0 {
			return run(s, i, cL)
		}
		if c0&(cNL|cN) == 0 {
			if n := run(s, i+w0, cL); n > 0 {
				return w0 + n
			}
		}
		if c0&cN != 0 {
			return upTo(s, i, cN, maxDigits)
		}
		if n := punctuation(s, i, 0, cS|cL|cN, false); n > 0 {
			return n
		}
		if n := whitespace(s, i, true); n > 0 {
			return n
		}
		return w0
	}
}

// punctuation matches ` ?X+[\r\n]*` at s[i:], where X is a rune in span's
// terms (want, avoid): [^\s\p{L}\p{N}] in most patterns, [\p{P}\p{S}] in
// DeepSeek's. slash adds / to the tail as o200k does.
func punctuation(s string, i int, want, avoid uint16, slash bool) int {
	j := i
	if j < len(s) && s[j] == ' ' {
		if n := span(s, j+1, want, avoid); n > 0 {
			j += 1 + n
		}
	}
	if j == i {
		n := span(s, i, want, avoid)
		if n == 0 {
			return 0
		}
		j += n
	}
	for j < len(s) && (s[j] == '\r' || s[j] == '\n' || slash && s[j] == '/') {
		j++
	}
	return j - i
}

// scanO200K is patO200K, or patKimiK2 when kimi: the same with Han runs
// split off first and excluded from the cased-letter classes.
func scanO200K(kimi bool) scanner {
	var upper, lower, not uint16 = cUpper, cLower, 0
	if kimi {
		not = cHan
	}
	return func(s string, i int) int {
		c0, w0 := classAt(s, i)
		if kimi && c0&cHan != 0 {
			return run(s, i, cHan)
		}
		prefix := c0&(cNL|cL|cN) == 0 && w0 > 0
		if prefix {
			if n := casedWord(s, i+w0, upper, lower, not); n > 0 {
				return w0 + n
			}
		}
		if n := casedWord(s, i, upper, lower, not); n > 0 {
			return n
		}
		if prefix {
			if n := capitalWord(s, i+w0, upper, lower, not); n > 0 {
				return w0 + n
			}
		}
		if n := capitalWord(s, i, upper, lower, not); n > 0 {
			return n
		}
		if c0&cN != 0 {
			return upTo(s, i, cN, 3)
		}
		if n := punctuation(s, i, 0, cS|cL|cN, !kimi); n > 0 {
			return n
		}
		if n := whitespace(s, i, true); n > 0 {
			return n
		}
		return w0
	}
}

// casedWord matches U*W+C? at s[q:] with backtracking, where U is upper, W
// lower (both minus not) and C the optional contraction.
func casedWord(s string, q int, upper, lower, not uint16) int {
	j, lastW := q, -1
	for {
		c, w := classAt(s, j)
		if w == 0 || c&upper == 0 || c&not != 0 {
			break
		}
		if c&lower != 0 {
			lastW = j + w
		}
		j += w
	}
	// U* stopped at j; W+ can go on from there when s[j] is lower.
	if n := span(s, j, lower, not); n > 0 {
		return j + n - q + contraction(s, j+n, true)
	}
	// Otherwise U* gives back runes until the last lower one inside its run.
	if lastW < 0 {
		return 0
	}
	return lastW - q + contraction(s, lastW, true)
}

// capitalWord matches U+W*C? at s[q:].
func capitalWord(s string, q int, upper, lower, not uint16) int {
	j := q + span(s, q, upper, not)
	if j == q {
		return 0
	}
	j += span(s, j, lower, not)
	return j - q + contraction(s, j, true)
}

// scanDSCJK is DeepSeek-V3's [一-龥぀-ゟ゠-ヿ]+.
func scanDSCJK(s string, i int) int {
	j := i
	for {
		r, w := at(s, j)
		if !(r >= 0x4e00 && r <= 0x9fa5 || r >= 0x3040 && r <= 0x30ff) {
			return j - i
		}
		j += w
	}
}

// scanDSMain is DeepSeek-V3's third Split regex, patDSMain. Unlike the
// others it does not match every rune (digits alone, controls, format
// characters): those stay between matches.
func scanDSMain(s string, i int) int {
	r0, w0 := at(s, i)
	if r0 >= 0 && r0 < utf8.RuneSelf && class(r0)&(cP|cSym) != 0 {
		j := i + 1
		for j < len(s) && (s[j]|0x20 >= 'a' && s[j]|0x20 <= 'z') {
			j++
		}
		if j > i+1 {
			return j - i
		}
	}
	c0 := class(r0)
	if w0 > 0 && c0&(cNL|cL|cP|cSym) == 0 {
		if n := run(s, i+w0, cL|cM); n > 0 {
			return w0 + n
		}
	}
	if n := run(s, i, cL|cM); n > 0 {
		return n
	}
	if n := punctuation(s, i, cP|cSym, 0, false); n > 0 {
		return n
	}
	return whitespace(s, i, true)
}
