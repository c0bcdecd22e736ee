package dataset

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
)

// pythonToJSON converts a Python literal of lists, dicts, strings, numbers
// and True/False/None (what str() of a JSON-like value prints; SWE-agent
// stores tool calls that way) into JSON.
func pythonToJSON(s string) (json.RawMessage, error) {
	var out strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\'' || c == '"':
			str, n, err := pythonString(s[i:])
			if err != nil {
				return nil, err
			}
			b, _ := json.Marshal(str)
			out.Write(b)
			i += n
		case strings.HasPrefix(s[i:], "True"):
			out.WriteString("true")
			i += 4
		case strings.HasPrefix(s[i:], "False"):
			out.WriteString("false")
			i += 5
		case strings.HasPrefix(s[i:], "None"):
			out.WriteString("null")
			i += 4
		default:
			out.WriteByte(c)
			i++
		}
	}
	j := json.RawMessage(out.String())
	if !json.Valid(j) {
		return nil, errors.New("not a Python literal of JSON-like values")
	}
	return j, nil
}

// pythonString decodes the quoted string at the start of s and returns it
// with the number of bytes it took.
func pythonString(s string) (string, int, error) {
	q := s[0]
	var b strings.Builder
	for i := 1; i < len(s); i++ {
		c := s[i]
		if c == q {
			return b.String(), i + 1, nil
		}
		if c != '\\' || i+1 >= len(s) {
			b.WriteByte(c)
			continue
		}
		i++
		switch e := s[i]; e {
		case 'n':
			b.WriteByte('\n')
		case 't':
			b.WriteByte('\t')
		case 'r':
			b.WriteByte('\r')
		case 'x', 'u':
			n := 2
			if e == 'u' {
				n = 4
			}
			if i+n >= len(s) {
				return "", 0, errors.New("short escape in Python string")
			}
			r, err := strconv.ParseUint(s[i+1:i+1+n], 16, 32)
			if err != nil {
				return "", 0, err
			}
			b.WriteRune(rune(r))
			i += n
		default:
			b.WriteByte(e)
		}
	}
	return "", 0, errors.New("unterminated Python string")
}
