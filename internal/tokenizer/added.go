package tokenizer

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// addedToken is a token matched in the text before the model sees it.
type addedToken struct {
	id         int
	content    string
	special    bool
	singleWord bool
	lstrip     bool
	rstrip     bool
}

// addedMatcher finds added tokens in text, leftmost-longest as HF's
// AddedVocabulary does, with a trie over their bytes.
type addedMatcher struct {
	root  *trieNode
	first [256]bool
}

type trieNode struct {
	next  map[byte]*trieNode
	token *addedToken
}

func newAddedMatcher(tokens []*addedToken) *addedMatcher {
	if len(tokens) == 0 {
		return nil
	}
	m := &addedMatcher{root: &trieNode{}}
	for _, t := range tokens {
		if t.content == "" {
			continue
		}
		n := m.root
		for i := 0; i < len(t.content); i++ {
			c := t.content[i]
			if n.next == nil {
				n.next = map[byte]*trieNode{}
			}
			child := n.next[c]
			if child == nil {
				child = &trieNode{}
				n.next[c] = child
			}
			n = child
		}
		if n.token == nil {
			n.token = t
		}
		m.first[t.content[0]] = true
	}
	return m
}

// longest returns the longest token starting at s[i:], or nil.
func (m *addedMatcher) longest(s string, i int) (*addedToken, int) {
	var best *addedToken
	end := 0
	n := m.root
	for j := i; j < len(s); j++ {
		n = n.next[s[j]]
		if n == nil {
			break
		}
		if n.token != nil {
			best, end = n.token, j+1
		}
	}
	return best, end
}

// split walks s, calling text for the runs between added tokens (with
// whether the run starts s) and token for each token found, honouring
// single_word, lstrip and rstrip as HF's AddedVocabulary::find_matches does.
func (m *addedMatcher) split(s string, text func(string, bool), token func(*addedToken)) {
	if m == nil {
		text(s, true)
		return
	}
	done := 0
	for i := 0; i < len(s); {
		if !m.first[s[i]] {
			i++
			continue
		}
		t, stop := m.longest(s, i)
		if t == nil {
			i++
			continue
		}
		start := i
		if t.singleWord && (endsWithWord(s[:start]) || startsWithWord(s[stop:])) {
			i++
			continue
		}
		if t.lstrip {
			start = max(len(strings.TrimRightFunc(s[:start], unicode.IsSpace)), done)
		}
		if t.rstrip {
			stop = len(s) - len(strings.TrimLeftFunc(s[stop:], unicode.IsSpace))
		}
		if start > done {
			text(s[done:start], done == 0)
		}
		token(t)
		done, i = stop, stop
	}
	if done < len(s) {
		text(s[done:], done == 0)
	}
}

func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsDigit(r) || r == '_' || unicode.IsMark(r)
}

func endsWithWord(s string) bool {
	r, _ := utf8.DecodeLastRuneInString(s)
	return s != "" && isWordRune(r)
}

func startsWithWord(s string) bool {
	r, _ := utf8.DecodeRuneInString(s)
	return s != "" && isWordRune(r)
}
