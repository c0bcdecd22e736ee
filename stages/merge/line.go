package merge

import (
	"github.com/eaglet-dev/eaglet/internal/conv"
)

// line is one output record in the messages format: OpenAI's field names
// (reasoning_content, {type: function, function: ...} tools and calls), so
// a stock Hugging Face chat template renders it as the server was sent it,
// and the source row's own id beside eaglet's key.
type line struct {
	ID       string               `json:"id"`
	Dataset  string               `json:"dataset"`
	SourceID string               `json:"source_id,omitempty"`
	Messages []conv.OpenAIMessage `json:"messages"`
	Tools    []conv.OpenAITool    `json:"tools,omitempty"`
}

func toLine(rec *conv.Record) line {
	return line{ID: rec.Key, Dataset: rec.Dataset, SourceID: rec.Source.ID, Messages: conv.ToOpenAI(rec.Conversation()), Tools: conv.ToolsToOpenAI(rec.Tools)}
}
