package dataset

import (
	"bytes"
	"encoding/json"
	"encoding/json/jsontext"
	"errors"
	"io"
	"slices"
	"sync"
	"unicode/utf8"
)

// A row's values are sliced out of the row rather than copied into
// json.RawMessage one by one, and a message list is read in the same way
// rather than through reflection: together a third of a load's CPU. Each
// reader falls back to encoding/json (which returns the same values, and
// the errors rows have always been reported with) on anything it does not
// take: invalid JSON, names it would have to fold.

type scanner struct {
	r   bytes.Reader
	dec *jsontext.Decoder
	// obj, raws and lists are chatRow's results, reused row after row:
	// making them anew for every row was a third of a load's allocation.
	obj   object
	raws  []rawMessage
	lists []decodedList
	// names interns member names, so filling obj allocates no key.
	names map[string]string
}

// maxNames bounds names: rows whose keys are data (ids as keys) would
// otherwise grow it without end.
const maxNames = 256

// dupNames lets a name repeat, as encoding/json does (the last one wins).
var dupNames = jsontext.AllowDuplicateNames(true)

var scanners = sync.Pool{New: func() any {
	s := &scanner{}
	s.dec = jsontext.NewDecoder(&s.r)
	return s
}}

// eachMember calls fn with the name and value of each member of the JSON
// object raw, in order; both alias raw. It is false, having called fn for
// some members perhaps, when raw is not one valid JSON object, a name is
// escaped, or fn is false.
func eachMember(raw []byte, fn func(name, value []byte) bool) bool {
	s := scanners.Get().(*scanner)
	defer scanners.Put(s)
	s.r.Reset(raw)
	s.dec.Reset(&s.r, dupNames)
	if !s.members(raw, fn) {
		return false
	}
	_, err := s.dec.ReadToken()
	return err == io.EOF
}

// members reads an object from the decoder over raw, calling fn with each
// member's name and value, both aliasing raw.
func (s *scanner) members(raw []byte, fn func(name, value []byte) bool) bool {
	if tok, err := s.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return false
	}
	for s.dec.PeekKind() == '"' {
		name, err := s.dec.ReadValue()
		if err != nil || bytes.IndexByte(name, '\\') >= 0 {
			return false
		}
		// What the decoder returns lasts until its next read; raw does not.
		at := int(s.dec.InputOffset())
		name = raw[at-len(name)+1 : at-1]
		v, err := s.dec.ReadValue()
		if err != nil {
			return false
		}
		at = int(s.dec.InputOffset())
		if !fn(name, raw[at-len(v):at]) {
			return false
		}
	}
	tok, err := s.dec.ReadToken()
	return err == nil && tok.Kind() == '}'
}

// scanObject is json.Unmarshal of raw into an object, without copying.
func scanObject(raw []byte) (object, bool) {
	obj := object{}
	ok := eachMember(raw, func(name, value []byte) bool {
		obj[string(name)] = value
		return true
	})
	return obj, ok
}

// wireNames are the JSON names of wireMessage's fields, in field order.
var wireNames = []string{"role", "from", "speaker", "content", "value", "text", "reasoning_content", "reasoning",
	"thinking", "tool_calls", "function_call", "tool_call_id", "tool_call_ids", "name"}

// scanMessages is json.Unmarshal of list into []wireMessage followed by
// fromWires, without reflection or copies. encoding/json matches a
// struct's names without regard to case: a name matching a field only so
// is left to it.
func scanMessages(list []byte) ([]rawMessage, bool) {
	s := scanners.Get().(*scanner)
	defer scanners.Put(s)
	s.r.Reset(list)
	s.dec.Reset(&s.r, dupNames)
	out, ok := s.messages(list, nil)
	if !ok {
		return nil, false
	}
	_, err := s.dec.ReadToken()
	return out, err == io.EOF
}

// messages reads an array of message objects from the decoder over raw,
// appending each message's fields to out.
func (s *scanner) messages(raw []byte, out []rawMessage) ([]rawMessage, bool) {
	if tok, err := s.dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, false
	}
	if out == nil {
		// Most conversations have a few messages: one allocation, not three.
		out = make([]rawMessage, 0, 4)
	}
	for s.dec.PeekKind() == '{' {
		var w wireMessage
		fields := [...]*json.RawMessage{&w.Role, &w.From, &w.Speaker, &w.Content, &w.Value, &w.Text, &w.ReasoningContent,
			&w.Reasoning, &w.Thinking, &w.ToolCalls, &w.FunctionCall, &w.ToolCallID, &w.ToolCallIDs, &w.Name}
		ok := s.members(raw, func(name, value []byte) bool {
			for i, n := range wireNames {
				if string(name) == n {
					*fields[i] = value
					return true
				}
			}
			for _, n := range wireNames {
				if bytes.EqualFold(name, []byte(n)) {
					return false
				}
			}
			// Names outside ASCII may fold onto a field's in Unicode.
			return isASCII(name)
		})
		if !ok {
			return nil, false
		}
		out = append(out, w.raw())
	}
	tok, err := s.dec.ReadToken()
	return out, err == nil && tok.Kind() == ']'
}

// listNames are the names messageList may find a row's messages under
// when the mapping renames nothing.
var listNames = append(append([]string(nil), fields[fieldMessages].keys...), "prompt")

// decodedList is a row's member that was read as messages on the way.
type decodedList struct {
	name string
	raws []rawMessage
}

// chatRow is scanObject for a row holding a message list: an array under
// a name messageList looks for is read as messages as it is passed, rather
// than scanned once to find its end and again to decode it. It is false
// where scanObject or scanMessages would be. What it returns is the
// scanner's own, valid until the scanner goes back to the pool.
func (s *scanner) chatRow(raw []byte) (object, []decodedList, bool) {
	s.r.Reset(raw)
	s.dec.Reset(&s.r, dupNames)
	if tok, err := s.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, nil, false
	}
	if s.obj == nil {
		s.obj, s.names = object{}, map[string]string{}
	}
	clear(s.obj)
	s.raws, s.lists = s.raws[:0], s.lists[:0]
	for s.dec.PeekKind() == '"' {
		name, err := s.dec.ReadValue()
		if err != nil || bytes.IndexByte(name, '\\') >= 0 {
			return nil, nil, false
		}
		at := int(s.dec.InputOffset())
		key := s.name(raw[at-len(name)+1 : at-1])
		if s.dec.PeekKind() == '[' && slices.Contains(listNames, key) {
			// The value starts after the colon and any space.
			start := at + bytes.IndexByte(raw[at:], ':') + 1
			for raw[start] == ' ' || raw[start] == '\t' || raw[start] == '\r' || raw[start] == '\n' {
				start++
			}
			first := len(s.raws)
			if s.raws, err = s.appendMessages(raw); err != nil {
				return nil, nil, false
			}
			s.obj[key] = raw[start:s.dec.InputOffset()]
			s.lists = append(s.lists, decodedList{key, s.raws[first:len(s.raws):len(s.raws)]})
			continue
		}
		v, err := s.dec.ReadValue()
		if err != nil {
			return nil, nil, false
		}
		at = int(s.dec.InputOffset())
		s.obj[key] = raw[at-len(v) : at]
	}
	if tok, err := s.dec.ReadToken(); err != nil || tok.Kind() != '}' {
		return nil, nil, false
	}
	_, err := s.dec.ReadToken()
	return s.obj, s.lists, err == io.EOF
}

// errNotMessages is appendMessages failing: chatRow then falls back.
var errNotMessages = errors.New("not a list of messages")

// appendMessages is messages into s.raws, whose earlier lists it keeps.
func (s *scanner) appendMessages(raw []byte) ([]rawMessage, error) {
	if s.raws == nil {
		s.raws = make([]rawMessage, 0, 8)
	}
	out, ok := s.messages(raw, s.raws)
	if !ok {
		return s.raws, errNotMessages
	}
	return out, nil
}

// name returns b as a string, the same string for the same name, once
// names holds it.
func (s *scanner) name(b []byte) string {
	if k, ok := s.names[string(b)]; ok {
		return k
	}
	k := string(b)
	if len(s.names) < maxNames {
		s.names[k] = k
	}
	return k
}

// decoded is the list read under name, the last if repeated.
func decoded(lists []decodedList, name string) ([]rawMessage, bool) {
	for i := len(lists) - 1; i >= 0; i-- {
		if lists[i].name == name {
			return lists[i].raws, true
		}
	}
	return nil, false
}

func isASCII(b []byte) bool {
	for _, c := range b {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
