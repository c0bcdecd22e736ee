package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The vocabulary and merges are most of a tokenizer.json (hundreds of
// thousands of entries); reading them with this small scanner rather than
// through encoding/json's reflection halves the load time. Strings with
// escapes, which are rare in vocabularies, are handed to encoding/json.

var errSyntax = errors.New("malformed JSON")

type rawScanner struct {
	data []byte
	i    int
}

func (s *rawScanner) skip() {
	for s.i < len(s.data) {
		switch s.data[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

// expect consumes c after any whitespace.
func (s *rawScanner) expect(c byte) bool {
	s.skip()
	if s.i < len(s.data) && s.data[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *rawScanner) peek() byte {
	s.skip()
	if s.i < len(s.data) {
		return s.data[s.i]
	}
	return 0
}

func (s *rawScanner) str() (string, error) {
	s.skip()
	if s.i >= len(s.data) || s.data[s.i] != '"' {
		return "", errSyntax
	}
	start := s.i
	escaped := false
	for j := start + 1; j < len(s.data); j++ {
		switch s.data[j] {
		case '\\':
			escaped = true
			j++
		case '"':
			s.i = j + 1
			if !escaped {
				return string(s.data[start+1 : j]), nil
			}
			var v string
			err := json.Unmarshal(s.data[start:j+1], &v)
			return v, err
		}
	}
	return "", errSyntax
}

func (s *rawScanner) integer() (int, error) {
	s.skip()
	neg := s.i < len(s.data) && s.data[s.i] == '-'
	if neg {
		s.i++
	}
	start, n := s.i, 0
	for s.i < len(s.data) && s.data[s.i] >= '0' && s.data[s.i] <= '9' {
		n = n*10 + int(s.data[s.i]-'0')
		s.i++
	}
	if s.i == start || s.i-start > 10 {
		return 0, errSyntax
	}
	if neg {
		n = -n
	}
	return n, nil
}

// list calls item for each element of a JSON array.
func (s *rawScanner) list(item func() error) error {
	if !s.expect('[') {
		return errSyntax
	}
	if s.expect(']') {
		return nil
	}
	for {
		if err := item(); err != nil {
			return err
		}
		if s.expect(']') {
			return nil
		}
		if !s.expect(',') {
			return errSyntax
		}
	}
}

// parseVocab reads a {"token": id, ...} object.
func parseVocab(raw json.RawMessage) (map[string]int, error) {
	s := &rawScanner{data: raw}
	vocab := make(map[string]int, len(raw)/16)
	if !s.expect('{') {
		return nil, fmt.Errorf("model vocab: not an object")
	}
	if s.expect('}') {
		return vocab, nil
	}
	for {
		k, err := s.str()
		if err == nil && !s.expect(':') {
			err = errSyntax
		}
		var id int
		if err == nil {
			id, err = s.integer()
		}
		if err != nil {
			return nil, fmt.Errorf("model vocab: %w at byte %d", err, s.i)
		}
		vocab[k] = id
		if s.expect('}') {
			return vocab, nil
		}
		if !s.expect(',') {
			return nil, fmt.Errorf("model vocab: %w at byte %d", errSyntax, s.i)
		}
	}
}

// parseMerges accepts both spellings of BPE merges: "a b" strings and
// ["a", "b"] pairs.
func parseMerges(raw json.RawMessage) ([][2]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	s := &rawScanner{data: raw}
	merges := make([][2]string, 0, len(raw)/16)
	err := s.list(func() error {
		if s.peek() == '[' {
			var pair [2]string
			n := 0
			err := s.list(func() error {
				if n == 2 {
					return fmt.Errorf("entry %d has more than two tokens", len(merges))
				}
				var err error
				pair[n], err = s.str()
				n++
				return err
			})
			if err == nil && n != 2 {
				err = fmt.Errorf("entry %d is not two tokens", len(merges))
			}
			merges = append(merges, pair)
			return err
		}
		l, err := s.str()
		if err != nil {
			return err
		}
		a, b, ok := strings.Cut(l, " ")
		if !ok || strings.Contains(b, " ") {
			return fmt.Errorf("entry %d %q is not two tokens", len(merges), l)
		}
		merges = append(merges, [2]string{a, b})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("model merges: %w", err)
	}
	return merges, nil
}
