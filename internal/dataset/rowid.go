package dataset

import (
	"bytes"
	"strconv"
)

// idKeys are the top-level fields datasets name a row's own id by, in the
// order they are preferred (BFCL and ShareGPT "id", MT-Bench
// "question_id", Open-Assistant "message_tree_id", ...).
var idKeys = []string{"id", "uuid", "conversation_id", "question_id", "task_id", "sample_id", "message_tree_id", "prompt_id"}

// rowID returns the row's own id as the source wrote it (a string, or a
// number's digits), or "" when the row is not an object or has none. It
// scans the row's top level without decoding it: loading runs it on every
// row, and a second full decode would cost as much as the first.
func rowID(raw []byte) string {
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return ""
	}
	best, bestRank := "", len(idKeys)
	i++
	for {
		i = skipSpace(raw, i)
		if i >= len(raw) || raw[i] != '"' {
			return best
		}
		kend := skipValue(raw, i)
		if kend < 0 {
			return best
		}
		key := raw[i:kend]
		i = skipSpace(raw, kend)
		if i >= len(raw) || raw[i] != ':' {
			return best
		}
		i = skipSpace(raw, i+1)
		vend := skipValue(raw, i)
		if vend < 0 {
			return best
		}
		if rank := idRank(key); rank < bestRank {
			if v := idValue(raw[i:vend]); v != "" {
				best, bestRank = v, rank
			}
		}
		i = skipSpace(raw, vend)
		if i >= len(raw) || raw[i] != ',' {
			return best
		}
		i++
	}
}

// idRank is the preference of a quoted key among idKeys, or len(idKeys).
func idRank(quoted []byte) int {
	if len(quoted) < 2 {
		return len(idKeys)
	}
	k := quoted[1 : len(quoted)-1]
	for r, name := range idKeys {
		if string(k) == name {
			return r
		}
	}
	return len(idKeys)
}

// idValue is a string's text or a number's digits; other values are no id.
func idValue(v []byte) string {
	switch {
	case len(v) == 0:
		return ""
	case v[0] == '"':
		s, _ := str(v)
		return s
	case v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
		if _, err := strconv.ParseFloat(string(v), 64); err != nil {
			return ""
		}
		return string(v)
	}
	return ""
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipValue returns the offset just past the JSON value at b[i], or -1 when
// it is cut short. It trusts the row to be valid JSON, which the shape's
// own decode checks.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch b[i] {
	case '"':
		// The first quote after i that is not escaped, found with
		// IndexByte rather than byte by byte: strings are most of a row.
		for j := i + 1; ; {
			k := bytes.IndexByte(b[j:], '"')
			if k < 0 {
				return -1
			}
			j += k
			if precededByBackslashes(b, j)%2 == 0 {
				return j + 1
			}
			j++
		}
	case '{', '[':
		depth := 0
		for j := i; j < len(b); j++ {
			switch b[j] {
			case '"':
				end := skipValue(b, j)
				if end < 0 {
					return -1
				}
				j = end - 1
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				if depth == 0 {
					return j + 1
				}
			}
		}
		return -1
	}
	j := i
	for j < len(b) && b[j] != ',' && b[j] != '}' && b[j] != ']' && b[j] != ' ' && b[j] != '\n' && b[j] != '\t' && b[j] != '\r' {
		j++
	}
	return j
}
