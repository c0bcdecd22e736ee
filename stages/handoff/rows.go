package handoff

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
)

// answer is one assistant turn the target generated for a record.
type answer struct {
	index   int            // 0-based among the record's generated turns
	context []conv.Message // what the target was given
	msg     conv.Message   // its answer
	finish  string
	// promptTokens and completionTokens are the server's counts.
	promptTokens, completionTokens int
	outputIDs                      []int
	// sentIDs are the exact prompt ids sent, when known (the tokenize
	// stage's, for a record answered in one request); sentLen counts the
	// ids sent for a later turn rendered by generate, to check a re-render.
	sentIDs []int
	sentLen int
}

// conversation is the turn's context followed by its answer, in a new
// slice.
func (t answer) conversation() []conv.Message {
	return append(append(make([]conv.Message, 0, len(t.context)+1), t.context...), t.msg)
}

// answers lists the turns the target generated, oldest first: every
// earlier turn kept on the generation, then the final one. Assistant turns
// the source wrote are never among them.
func answers(rec *conv.Record) []answer {
	g := rec.Generation
	if g == nil {
		return nil
	}
	var out []answer
	for i, t := range g.Turns {
		if t.Message <= 0 || t.Message >= len(rec.Messages) {
			continue
		}
		out = append(out, answer{index: i, context: rec.Messages[:t.Message], msg: rec.Messages[t.Message],
			finish: t.FinishReason, promptTokens: t.PromptTokens, completionTokens: t.CompletionTokens,
			outputIDs: t.OutputIDs, sentIDs: t.PromptIDs, sentLen: t.SentIDs})
	}
	last := answer{index: len(out), context: rec.Prompt(), msg: g.Message(), finish: g.FinishReason,
		promptTokens: g.PromptTokens, completionTokens: g.CompletionTokens, outputIDs: g.OutputIDs}
	switch {
	case len(g.PromptIDs) > 0:
		// The server said what it rendered (vLLM's return_token_ids).
		last.sentIDs = g.PromptIDs
	case len(g.Turns) == 0 && len(rec.PromptIDs) > 0 && !g.SentMessages:
		// The tokenize stage's ids, which the server was sent.
		last.sentIDs = rec.PromptIDs
	}
	if last.promptTokens == 0 {
		last.promptTokens = max(rec.PromptTokens, len(rec.PromptIDs))
	}
	return append(out, last)
}

// sourceToolCalls says whether a turn's context holds tool calls the
// source wrote rather than the target.
func sourceToolCalls(rec *conv.Record, t answer) bool {
	generated := map[int]bool{}
	if g := rec.Generation; g != nil {
		for _, x := range g.Turns {
			generated[x.Message] = true
		}
	}
	for i, m := range t.context {
		if m.Role == conv.Assistant && len(m.ToolCalls) > 0 && !generated[i] {
			return true
		}
	}
	return false
}

// Where a row's ids came from, and how its prompt was checked.
const (
	fromServer    = "server"    // the server's output ids
	fromTokenized = "tokenized" // the answer's text tokenized with the target's tokenizer

	promptExact    = "exact"     // the row's context is the ids the server read, by its count
	promptCount    = "count"     // re-rendered, as long as the server counted
	promptMismatch = "mismatch"  // another length than the server counted
	promptUnknown  = "unchecked" // nothing to check against
)

// tokens is a turn as ids: the context, then the supervised answer and its
// end-of-turn marker.
type tokens struct {
	ids, mask   []int
	supervised  int
	from, check string
	// contextLen is the context's length, for a mismatch's figures.
	contextLen int
	// idsAgree says whether the server's output ids decode, with the
	// handoff's tokenizer, to the answer's text; false flags a tokenizer
	// that is not the target's.
	idsAgree bool
}

// idsAgree reports whether ids decoded to text hold the answer's content
// and reasoning as the server parsed them out of that text.
func idsAgree(decoded string, m conv.Message) bool {
	return strings.Contains(decoded, strings.TrimSpace(m.Content)) && strings.Contains(decoded, strings.TrimSpace(m.Reasoning))
}

// errUnaligned marks a turn the template cannot split at the answer.
var errUnaligned = errors.New("the template does not render the context as a prefix of the answered conversation")

// encode builds a turn's ids. The context is what the server was given:
// the ids sent when the store has them, else the target's template
// rendered over the context (checked against the server's count). The
// answer is the server's own output ids when it returned them, else its
// text tokenized. The template's end-of-turn marker follows an answer that
// stopped; an answer cut at max_tokens gets none, as the target wrote none.
func encode(tmpl *chat.Template, tools []conv.ToolDef, t answer) (*tokens, error) {
	convo := append(slices.Clip(t.context), t.msg)
	rendered, err := tmpl.RenderAnswer(convo, tools)
	if errors.Is(err, chat.ErrMaskUnaligned) {
		return nil, errUnaligned
	}
	if err != nil {
		return nil, fmt.Errorf("render turn %d: %w", t.index, err)
	}
	tk := &tokens{}
	ctx := t.sentIDs
	want := t.promptTokens
	if ctx == nil {
		ctx = tmpl.Tokens(rendered.Prompt)
		if t.sentLen > 0 {
			want = t.sentLen
		}
	}
	tk.contextLen = len(ctx)
	switch {
	case want != 0 && want != len(ctx):
		tk.check = promptMismatch
	case t.sentIDs != nil:
		tk.check = promptExact
	case want == 0:
		tk.check = promptUnknown
	default:
		tk.check = promptCount
	}
	var ans []int
	if len(t.outputIDs) > 0 {
		tk.from = fromServer
		// Answers recorded before the model's stop ids were trimmed on
		// every path still end on the one the server included.
		out := t.outputIDs
		if n := len(out); t.finish != "length" && slices.Contains(tmpl.StopIDs(), out[n-1]) {
			out = out[:n-1]
		}
		tk.idsAgree = idsAgree(tmpl.Tokenizer().Decode(out), t.msg)
		ans = slices.Clone(out)
		if t.finish != "length" && rendered.End != "" {
			ans = append(ans, tmpl.Tokens(rendered.End)...)
		}
	} else {
		tk.from = fromTokenized
		text := rendered.Text
		if t.finish == "length" && rendered.End != "" {
			text = text[:len(text)-len(rendered.End)]
		}
		ans = tmpl.Tokens(text)
	}
	tk.ids = append(slices.Clip(ctx), ans...)
	tk.mask = make([]int, len(tk.ids))
	for i := len(ctx); i < len(tk.ids); i++ {
		tk.mask[i] = 1
	}
	tk.supervised = len(ans)
	return tk, nil
}

// clip fits a row into the trainer's window, as drop or clip says; ok is
// false when nothing supervised is left.
func clip(tk *tokens, maxLength int) (ok bool) {
	if maxLength <= 0 || len(tk.ids) <= maxLength {
		return tk.supervised > 0
	}
	tk.ids, tk.mask = tk.ids[:maxLength], tk.mask[:maxLength]
	tk.supervised = 0
	for _, m := range tk.mask {
		tk.supervised += m
	}
	return tk.supervised > 0
}
