package dataset

import (
	"errors"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

// DecodeChat reads one chat row as apply_chat_template and OpenAI-compatible
// servers take it: {"messages": [...], "tools": [...]}, with content a
// string, null or a list of parts, reasoning under reasoning_content,
// reasoning or thinking, tools wrapped in {type: function, function} or
// flat, tool-call arguments a string or an object, name and tool_call_id.
// Unlike a dataset row it is kept as given: no made-up call ids, no
// reasoning split out of content, and a conversation need not have a user
// turn. Its errors say what is wrong with the row; the caller names the
// line.
func DecodeChat(row []byte) (*conv.Record, error) {
	m := mapping{fields: map[field]string{}, roles: roleWords, asGiven: true}
	rec, err := convertChat(row, m)
	if err != nil {
		return nil, errors.New(err.Reason)
	}
	return rec, nil
}
