package evaluate

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

// prompt is one request the stage sends to every side: a conversation's
// prefix up to an assistant turn.
type prompt struct {
	key, dataset string
	// turn is the answer's turn in its conversation, 1 for the first.
	turn  int
	msgs  []conv.Message
	tools []conv.ToolDef
	// ids are the prompt's token ids, for an endpoint that takes them;
	// nil when the record has none for this turn and no tokenizer
	// renders it.
	ids []int
	// tokens is the prompt's length, known or estimated, for grouping by
	// context bucket before anything is sent.
	tokens int
	// chatHash identifies the prompt sent as messages and tools, idsHash
	// as token ids ("" without them).
	chatHash, idsHash string
}

// hash identifies the prompt as an endpoint gets it.
func (p *prompt) hash(takesIDs bool) string {
	if takesIDs {
		return p.idsHash
	}
	return p.chatHash
}

// prompts returns the prompts of rec: its prompt, what generate answered,
// or with turns: all the prefix before each assistant turn of its
// conversation (the target's own answers, when generate made them), each
// from its exact prefix.
func (e *Evaluate) prompts(rec *conv.Record) ([]prompt, error) {
	msgs := rec.Conversation()
	var out []prompt
	turn := 0
	for i, m := range msgs {
		if m.Role != conv.Assistant {
			continue
		}
		turn++
		if e.opts.Turns == "all" {
			p, err := e.prompt(rec, msgs[:i], turn)
			if err != nil {
				return nil, err
			}
			out = append(out, p)
		}
	}
	if e.opts.Turns == "all" && len(out) > 0 {
		return out, nil
	}
	// The record's own prompt: what comes before its final answer, or the
	// whole conversation when it has none yet (a benchmark's question).
	prefix := rec.Prompt()
	n := 1
	for _, m := range prefix {
		if m.Role == conv.Assistant {
			n++
		}
	}
	p, err := e.prompt(rec, prefix, n)
	if err != nil {
		return nil, err
	}
	return []prompt{p}, nil
}

// prompt builds the prompt of rec answering turn after msgs.
func (e *Evaluate) prompt(rec *conv.Record, msgs []conv.Message, turn int) (prompt, error) {
	p := prompt{key: rec.Key, dataset: rec.Dataset, turn: turn, msgs: msgs, tools: rec.Tools}
	whole := len(msgs) == len(rec.Prompt())
	switch {
	case whole && len(rec.PromptIDs) > 0:
		p.ids = rec.PromptIDs
	case e.tmpl != nil:
		enc, err := e.tmpl.Encode(msgs, rec.Tools, true)
		if err != nil {
			return p, fmt.Errorf("record %s turn %d: render with the chat template: %w", rec.Key, turn, err)
		}
		p.ids = enc.IDs
	}
	p.chatHash = conv.ContentKey(msgs, rec.Tools)
	switch {
	case p.ids != nil:
		h := sha256.New()
		var b [8]byte
		for _, id := range p.ids {
			binary.LittleEndian.PutUint64(b[:], uint64(id))
			h.Write(b[:])
		}
		p.idsHash = hex.EncodeToString(h.Sum(nil))
		p.tokens = len(p.ids)
	case whole && rec.PromptTokens > 0:
		p.tokens = rec.PromptTokens
	default:
		p.tokens = chars(msgs) / 4
	}
	return p, nil
}

// chars counts the characters of msgs, for a length estimate when no
// tokenizer is at hand: about four to a token in English text and code.
func chars(msgs []conv.Message) int {
	n := 0
	for _, m := range msgs {
		n += len(m.Content) + len(m.Reasoning)
		for _, tc := range m.ToolCalls {
			n += len(tc.Name) + len(tc.Arguments)
		}
	}
	return n
}
