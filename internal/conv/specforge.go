package conv

import "encoding/json"

// SpecForgeRow is a conversation as SpecForge's data preparation, its
// regeneration validator and its training loader read it: OpenAI-style
// messages under "conversations" and the tools as one JSON string, as
// SpecForge's own generator writes them, so Arrow needs no schema that
// holds across rows. merge's and handoff's specforge formats both write
// it.
type SpecForgeRow struct {
	ID string `json:"id"`
	// Status is "success" on a regenerated row (validate_regenerated_data.py
	// keeps only those); empty for a source conversation.
	Status        string          `json:"status,omitempty"`
	Conversations []OpenAIMessage `json:"conversations"`
	Tools         string          `json:"tools,omitempty"`
	// Metadata is the writer's own, carried through untouched.
	Metadata any `json:"metadata,omitempty"`
}

// NewSpecForgeRow builds the row of the messages and tools under id.
func NewSpecForgeRow(id string, msgs []Message, tools []ToolDef) SpecForgeRow {
	r := SpecForgeRow{ID: id, Conversations: ToOpenAI(msgs)}
	if len(tools) > 0 {
		// Marshalling ToolDefs (plain strings and raw JSON) cannot fail.
		b, _ := json.Marshal(ToolsToOpenAI(tools))
		r.Tools = string(b)
	}
	return r
}
