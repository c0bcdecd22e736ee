package dataset

import (
	"encoding/json"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

var shapeOASST = &shape{
	name: "oasst-tree",
	doc:  "Open-Assistant message trees {message_tree_id, prompt: {text, role, replies: [...]}}: the best-ranked path becomes the conversation",
	match: func(_ []byte, obj object, _ mapping) bool {
		return isObject(obj["prompt"]) && (has(obj, "message_tree_id") || firstKeyIs(obj["prompt"], "replies"))
	},
	convert: func(raw []byte, m mapping) (*conv.Record, *RowError) {
		obj, err := decodeObject(raw, "oasst-tree")
		if err != nil {
			return nil, err
		}
		var node oasstNode
		if e := json.Unmarshal(obj["prompt"], &node); e != nil {
			return nil, rowErr("wrong shape", "prompt is not a message tree: %v", e)
		}
		var list []json.RawMessage
		for n := &node; n != nil; n = n.best() {
			b, _ := json.Marshal(map[string]string{"role": n.Role, "content": n.Text})
			list = append(list, b)
		}
		all, _ := json.Marshal(list)
		msgs, err := convertMessages(all, m)
		if err != nil {
			return nil, err
		}
		return &conv.Record{Messages: msgs}, nil
	},
}

// oasstNode is one message of an Open-Assistant tree.
type oasstNode struct {
	Text    string      `json:"text"`
	Role    string      `json:"role"`
	Rank    *int        `json:"rank"`
	Deleted bool        `json:"deleted"`
	Replies []oasstNode `json:"replies"`
}

// best returns the reply ranked best by the reviewers (rank 0), the first
// unranked one when none is ranked, and nil at a leaf; deleted replies
// never count.
func (n *oasstNode) best() *oasstNode {
	var pick *oasstNode
	for i := range n.Replies {
		r := &n.Replies[i]
		if r.Deleted {
			continue
		}
		if pick == nil || (r.Rank != nil && (pick.Rank == nil || *r.Rank < *pick.Rank)) {
			pick = r
		}
	}
	return pick
}

// firstKeyIs reports whether raw is an object holding key.
func firstKeyIs(raw json.RawMessage, key string) bool {
	var o object
	return json.Unmarshal(raw, &o) == nil && has(o, key)
}
