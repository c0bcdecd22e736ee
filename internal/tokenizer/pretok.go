package tokenizer

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode"
)

// A preTokenizer cuts a normalized segment into the pieces the model
// encodes one at a time, calling emit for each non-empty piece in order.
// atStart says the segment begins the input text (Metaspace's "first"
// scheme prepends only there); emit passes it on for its first piece.
type preTokenizer interface {
	split(s string, atStart bool, emit func(piece string, atStart bool))
}

// splitBehavior says what a Split does with the pattern's matches.
type splitBehavior int

const (
	isolated splitBehavior = iota
	removed
	mergedWithPrevious
	mergedWithNext
	contiguous
)

var splitBehaviors = map[string]splitBehavior{
	"Isolated":           isolated,
	"Removed":            removed,
	"MergedWithPrevious": mergedWithPrevious,
	"MergedWithNext":     mergedWithNext,
	"Contiguous":         contiguous,
}

// splitter applies a pattern with a behavior, as HF's Split pre-tokenizer
// (and, with fixed settings, Digits and Metaspace) does.
type splitter struct {
	pattern  finder
	behavior splitBehavior
	invert   bool
}

func (p splitter) split(s string, atStart bool, emit func(string, bool)) {
	out := func(start, end int) {
		if end > start {
			emit(s[start:end], atStart && start == 0)
		}
	}
	// pending is a span not yet emitted because a later segment may join it.
	pStart, pEnd, pMatch, have := 0, 0, false, false
	flush := func() {
		if have {
			out(pStart, pEnd)
		}
		have = false
	}
	segment := func(start, end int, match bool) {
		if end <= start {
			return
		}
		if p.invert {
			match = !match
		}
		switch p.behavior {
		case isolated:
			out(start, end)
		case removed:
			if !match {
				out(start, end)
			}
		case mergedWithPrevious:
			if match && !pMatch && have {
				pEnd, pMatch = end, match
				return
			}
			flush()
			pStart, pEnd, pMatch, have = start, end, match, true
		case mergedWithNext:
			if have && pMatch && !match {
				out(pStart, end)
				have = false
				return
			}
			flush()
			if match {
				pStart, pEnd, pMatch, have = start, end, match, true
			} else {
				out(start, end)
			}
		case contiguous:
			if have && match == pMatch {
				pEnd = end
				return
			}
			flush()
			pStart, pEnd, pMatch, have = start, end, match, true
		}
	}
	i := 0
	for i < len(s) {
		start, end := p.pattern.find(s, i)
		if start < 0 {
			break
		}
		segment(i, start, false)
		segment(start, end, true)
		i = end
	}
	segment(i, len(s), false)
	flush()
}

// sequence runs pre-tokenizers in order, each on the pieces of the last.
type sequence []preTokenizer

func (q sequence) split(s string, atStart bool, emit func(string, bool)) {
	if len(q) == 0 {
		emit(s, atStart)
		return
	}
	q[0].split(s, atStart, func(piece string, first bool) { q[1:].split(piece, first, emit) })
}

// byteLevelPre is the ByteLevel pre-tokenizer. The byte-to-unicode mapping
// itself is folded into the vocabulary at load, so only the prefix space
// and the optional GPT-2 regex remain.
type byteLevelPre struct {
	addPrefixSpace bool
	useRegex       bool
}

func (b byteLevelPre) split(s string, atStart bool, emit func(string, bool)) {
	if b.addPrefixSpace && !strings.HasPrefix(s, " ") {
		s = " " + s
	}
	if !b.useRegex {
		emit(s, atStart)
		return
	}
	splitter{pattern: scanner(scanGPT2)}.split(s, atStart, emit)
}

// metaspacePre replaces spaces with the replacement rune, prepends one as
// the scheme says, and splits before each replacement.
type metaspacePre struct {
	replacement string
	prepend     string // "always", "first" or "never"
	splitAt     bool
}

func (m metaspacePre) split(s string, atStart bool, emit func(string, bool)) {
	s = strings.ReplaceAll(s, " ", m.replacement)
	if (m.prepend == "always" || m.prepend == "first" && atStart) && !strings.HasPrefix(s, m.replacement) {
		s = m.replacement + s
	}
	if !m.splitAt {
		emit(s, atStart)
		return
	}
	splitter{pattern: literalFinder(m.replacement), behavior: mergedWithNext}.split(s, atStart, emit)
}

// numericScanner matches one (individual) or a run of Unicode numerics, as
// Rust's char::is_numeric defines them.
func numericScanner(individual bool) scanner {
	return func(s string, i int) int {
		r, w := at(s, i)
		if !unicode.IsNumber(r) {
			return 0
		}
		if individual {
			return w
		}
		return span(s, i, cN, 0)
	}
}

// buildPreTokenizer builds a pre-tokenizer from its tokenizer.json form,
// reporting in byteLevel whether a ByteLevel step is present.
func buildPreTokenizer(raw json.RawMessage, byteLevel *bool) (preTokenizer, error) {
	if isNull(raw) {
		return sequence(nil), nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("pre_tokenizer: %w", err)
	}
	switch c.Type {
	case "Sequence":
		var q sequence
		for _, r := range c.PreTokenizers {
			p, err := buildPreTokenizer(r, byteLevel)
			if err != nil {
				return nil, err
			}
			q = append(q, p)
		}
		return q, nil
	case "Split":
		b, ok := splitBehaviors[c.Behavior]
		if !ok {
			return nil, fmt.Errorf("pre_tokenizer Split: unsupported behavior %q", c.Behavior)
		}
		f, err := patternFinder(c.Pattern)
		if err != nil {
			return nil, fmt.Errorf("pre_tokenizer Split: %w", err)
		}
		return splitter{pattern: f, behavior: b, invert: c.Invert}, nil
	case "ByteLevel":
		*byteLevel = true
		return byteLevelPre{addPrefixSpace: c.AddPrefixSpace, useRegex: c.UseRegex == nil || *c.UseRegex}, nil
	case "Digits":
		return splitter{pattern: numericScanner(c.IndividualDigits), behavior: isolated}, nil
	case "Metaspace":
		m := metaspacePre{replacement: c.Replacement, prepend: c.PrependScheme, splitAt: c.Split == nil || *c.Split}
		if m.prepend == "" {
			m.prepend = "always"
			if !c.AddPrefixSpace && strings.Contains(string(raw), `"add_prefix_space"`) {
				m.prepend = "never"
			}
		}
		return m, nil
	}
	return nil, fmt.Errorf("pre_tokenizer: unsupported type %q", c.Type)
}

func patternFinder(p hfPattern) (finder, error) {
	switch {
	case p.String != nil:
		return literalFinder(*p.String), nil
	case p.Regex != nil:
		f, err := compilePattern(*p.Regex)
		if err != nil {
			return nil, fmt.Errorf("unsupported regex %q (not a known tokenizer pattern, and %v)", *p.Regex, err)
		}
		return f, nil
	}
	return nil, fmt.Errorf("pattern has neither String nor Regex")
}
