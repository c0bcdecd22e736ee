package sim

import "hash/fnv"

// The sim tokenization: a token is optional leading whitespace followed by
// either a maximal run of letters, digits and underscores or one other
// character. "Hello, world." is four tokens: "Hello", ",", " world", ".".
// Token counts therefore track words and punctuation, close enough to a BPE
// tokenizer on English prose for lengths, budgets and speeds to behave.
//
// Ids are a hash of the piece into [firstWordID, VocabSize), so every id
// sequence is stable across runs and machines; ThinkStart, ThinkEnd and EOS
// are special tokens that never come out of Tokenize.
const (
	ThinkStart  = 1
	ThinkEnd    = 2
	EOS         = 3 // end of turn; its text is empty
	firstWordID = 16
	// VocabSize bounds every id the sim produces.
	VocabSize = 100_000
)

// Pieces splits text into sim tokens; joining them gives back text.
func Pieces(text string) []string {
	var out []string
	for len(text) > 0 {
		n := pieceLen(text)
		out = append(out, text[:n])
		text = text[n:]
	}
	return out
}

// Count returns the number of sim tokens in text without allocating.
func Count(text string) int {
	n := 0
	for len(text) > 0 {
		text = text[pieceLen(text):]
		n++
	}
	return n
}

// Tokenize returns the sim token ids of text.
func Tokenize(text string) []int {
	ids := make([]int, 0, len(text)/5+1)
	for len(text) > 0 {
		n := pieceLen(text)
		ids = append(ids, PieceID(text[:n]))
		text = text[n:]
	}
	return ids
}

// PieceID returns the id of one sim token.
func PieceID(piece string) int {
	h := fnv.New32a()
	h.Write([]byte(piece))
	return firstWordID + int(h.Sum32()%(VocabSize-firstWordID))
}

// pieceLen returns the byte length of the token at the start of s.
func pieceLen(s string) int {
	i := 0
	for i < len(s) && isSpace(s[i]) {
		i++
	}
	if i == len(s) {
		return i
	}
	if !isWord(s[i]) {
		return i + 1
	}
	for i < len(s) && isWord(s[i]) {
		i++
	}
	return i
}

func isSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\t' || c == '\r' }

// isWord treats every byte of a multi-byte UTF-8 rune as a word byte, so a
// piece never splits a rune.
func isWord(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}
