package dataset

import (
	"github.com/eaglet-dev/eaglet/stages/conv"
)

var shapeTranscript = &shape{
	name: "transcript",
	doc:  "a flattened text transcript with SYSTEM:/USER:/ASSISTANT: lines (Hermes few-shot), <tools> and <tool_call> blocks parsed",
	match: func(_ []byte, obj object, _ mapping) bool {
		return false
	},
	convert: func(raw []byte, m mapping) (*conv.Record, *RowError) {
		return nil, rowErr("wrong shape", "not implemented")
	},
}
