package dataset

import (
	"bytes"
	"encoding/json"
	"encoding/json/jsontext"
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
}

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

// scanMessages is json.Unmarshal of list into []wireMessage, without
// reflection or copies. encoding/json matches a struct's names without
// regard to case: a name matching a field only so is left to it.
func scanMessages(list []byte) ([]wireMessage, bool) {
	s := scanners.Get().(*scanner)
	defer scanners.Put(s)
	s.r.Reset(list)
	s.dec.Reset(&s.r, dupNames)
	out, ok := s.messages(list)
	if !ok {
		return nil, false
	}
	_, err := s.dec.ReadToken()
	return out, err == io.EOF
}

// messages reads an array of message objects from the decoder over raw.
func (s *scanner) messages(raw []byte) ([]wireMessage, bool) {
	if tok, err := s.dec.ReadToken(); err != nil || tok.Kind() != '[' {
		return nil, false
	}
	// Most conversations have a few messages: one allocation, not three.
	out := make([]wireMessage, 0, 4)
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
		out = append(out, w)
	}
	tok, err := s.dec.ReadToken()
	return out, err == nil && tok.Kind() == ']'
}

// listNames are the names messageList may find a row's messages under
// when the mapping renames nothing.
var listNames = append(append([]string(nil), MappingKeys["messages"]...), "prompt")

// decodedList is a row's member that was read as messages on the way.
type decodedList struct {
	name  string
	wires []wireMessage
}

// scanChatRow is scanObject for a row holding a message list: an array
// under a name messageList looks for is read as messages as it is passed,
// rather than scanned once to find its end and again to decode it. It is
// false where scanObject or scanMessages would be.
func scanChatRow(raw []byte) (object, []decodedList, bool) {
	s := scanners.Get().(*scanner)
	defer scanners.Put(s)
	s.r.Reset(raw)
	s.dec.Reset(&s.r, dupNames)
	if tok, err := s.dec.ReadToken(); err != nil || tok.Kind() != '{' {
		return nil, nil, false
	}
	obj := object{}
	var lists []decodedList
	for s.dec.PeekKind() == '"' {
		name, err := s.dec.ReadValue()
		if err != nil || bytes.IndexByte(name, '\\') >= 0 {
			return nil, nil, false
		}
		at := int(s.dec.InputOffset())
		name = raw[at-len(name)+1 : at-1]
		if s.dec.PeekKind() == '[' && slices.Contains(listNames, string(name)) {
			// The value starts after the colon and any space.
			start := at + bytes.IndexByte(raw[at:], ':') + 1
			for raw[start] == ' ' || raw[start] == '\t' || raw[start] == '\r' || raw[start] == '\n' {
				start++
			}
			wires, ok := s.messages(raw)
			if !ok {
				return nil, nil, false
			}
			obj[string(name)] = raw[start:s.dec.InputOffset()]
			lists = append(lists, decodedList{string(name), wires})
			continue
		}
		v, err := s.dec.ReadValue()
		if err != nil {
			return nil, nil, false
		}
		at = int(s.dec.InputOffset())
		obj[string(name)] = raw[at-len(v) : at]
	}
	if tok, err := s.dec.ReadToken(); err != nil || tok.Kind() != '}' {
		return nil, nil, false
	}
	_, err := s.dec.ReadToken()
	return obj, lists, err == io.EOF
}

// decoded is the list read under name, the last if repeated.
func decoded(lists []decodedList, name string) ([]wireMessage, bool) {
	for i := len(lists) - 1; i >= 0; i-- {
		if lists[i].name == name {
			return lists[i].wires, true
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
