package dataset

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

// object is a row decoded one level deep: keys to raw values.
type object = map[string]json.RawMessage

// shape is one row layout: how to recognise it and how to convert it.
type shape struct {
	name string
	// doc says in a line what rows of this shape look like.
	doc string
	// match reports whether a row has this shape (used by auto detection).
	match func(raw []byte, obj object, m mapping) bool
	// convert turns one row into a record (Key and Source unset).
	convert func(raw []byte, m mapping) (*conv.Record, *RowError)
}

// Formats lists the shapes in detection order: the first that matches the
// first row wins.
var Formats []*shape

func init() {
	Formats = []*shape{
		shapeMessagesArray,
		shapeText,
		shapeBFCL,
		shapeMessages,
		shapeShareGPT,
		shapeOASST,
		shapeTranscript,
		shapeAlpaca,
		shapeQueryResponse,
		shapeSkyThought,
		shapePrompt,
	}
}

// FormatDoc returns the names and one-line descriptions of every format.
func FormatDoc() [][2]string {
	out := make([][2]string, len(Formats))
	for i, s := range Formats {
		out[i] = [2]string{s.name, s.doc}
	}
	return out
}

func shapeNamed(name string) *shape {
	for _, s := range Formats {
		if s.name == name {
			return s
		}
	}
	return nil
}

func joinNames() string {
	names := make([]string, len(Formats))
	for i, s := range Formats {
		names[i] = s.name
	}
	return strings.Join(names, ", ")
}

// detect picks the shape of a file from its first row.
func detect(raw []byte, m mapping) (*shape, *RowError) {
	var obj object
	if len(raw) > 0 && raw[0] == '{' {
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, invalidJSON(err)
		}
	}
	for _, s := range Formats {
		if s.match(raw, obj, m) {
			return s, nil
		}
	}
	return nil, unknownShape(raw, obj)
}

// unknownShape explains a row no shape matches, with a hint for the
// non-conversation files that sit beside datasets.
func unknownShape(raw []byte, obj object) *RowError {
	if obj == nil {
		return rowErr("unknown shape", "row is a JSON %s, not a conversation; force a format or fix the file", jsonKind(raw))
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	hint := "force a format (" + joinNames() + ") or name the fields with mapping"
	switch {
	case has(obj, "ground_truth"):
		hint = "this looks like a file of expected answers (BFCL possible_answer); load the matching question file instead"
	case has(obj, "name") && has(obj, "parameters"):
		hint = "this looks like a file of tool definitions, not conversations; tools belong inside each row"
	}
	return rowErr("unknown shape", "row has keys %s and matches no known shape: %s", strings.Join(keys, ", "), hint)
}

func has(obj object, k string) bool { _, ok := obj[k]; return ok }

func jsonKind(raw []byte) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "object"
	case '[':
		return "array"
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

func invalidJSON(err error) *RowError {
	re := rowErr("invalid JSON", "row is not valid JSON (%v); fix or remove it", err)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		re.at = se.Offset
	}
	return re
}

func rowErr(kind, format string, args ...any) *RowError {
	return &RowError{Kind: kind, Reason: fmt.Sprintf(format, args...)}
}

// decodeObject decodes a row that must be an object.
func decodeObject(raw []byte, shapeName string) (object, *RowError) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, rowErr("wrong shape", "row is a JSON %s, but the file's rows are %s objects", jsonKind(raw), shapeName)
	}
	if obj, ok := scanObject(raw); ok {
		return obj, nil
	}
	var obj object
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, invalidJSON(err)
	}
	return obj, nil
}

// firstElemHas reports whether list is a JSON array whose first element is
// an object with one of keys.
func firstElemHas(list json.RawMessage, keys ...string) bool {
	if len(list) == 0 || list[0] != '[' {
		return false
	}
	var els []json.RawMessage
	if json.Unmarshal(list, &els) != nil || len(els) == 0 {
		return false
	}
	var first object
	if json.Unmarshal(els[0], &first) != nil {
		return false
	}
	for _, k := range keys {
		if has(first, k) {
			return true
		}
	}
	return false
}

func isString(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '"' }
func isArray(raw json.RawMessage) bool  { return len(raw) > 0 && raw[0] == '[' }
func isObject(raw json.RawMessage) bool { return len(raw) > 0 && raw[0] == '{' }

// str decodes a JSON string; absent or null is "".
func str(raw json.RawMessage) (string, bool) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", true
	}
	// Most strings need no unescaping: copy them instead of decoding.
	if n := len(raw); n >= 2 && raw[0] == '"' && raw[n-1] == '"' && plain(raw[1:n-1]) {
		return string(raw[1 : n-1]), true
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}

// plain reports whether b is the body of a JSON string that decodes to
// itself: no escapes, no control characters, valid UTF-8. Printable ASCII,
// most text, is passed over eight bytes at a time: byte by byte this was
// a tenth of a load.
func plain(b []byte) bool {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		if x&highBits != 0 || below(x, 0x20) || hasByte(x, '"') || hasByte(x, '\\') {
			break
		}
	}
	b = b[i:]
	for _, c := range b {
		if c == '\\' || c == '"' || c < 0x20 {
			return false
		}
	}
	return utf8.Valid(b)
}

// Bytes of eight at once: highBits has the top bit of each byte set.
const (
	lowBits  = 0x0101010101010101
	highBits = 0x8080808080808080
)

// below reports whether a byte of x is under n (n <= 0x80), for x of
// ASCII bytes only.
func below(x uint64, n byte) bool { return (x-lowBits*uint64(n))&^x&highBits != 0 }

// hasByte reports whether a byte of x is c.
func hasByte(x uint64, c byte) bool { return below(x^(lowBits*uint64(c)), 1) }
