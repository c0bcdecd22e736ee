package filter

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
)

// Rules are the checks every EAGLE-3 recipe applies by hand, each one
// option instead of an expression. A record dropped by a rule is counted
// under the rule's name, so status shows how many each rule took out.
// Rules are tried in the order of the fields below and the first that
// matches names the drop, so every record is counted once.
type Rules struct {
	// ZeroSupervised drops records whose training conversation has no
	// assistant text, reasoning or tool call: nothing to learn from.
	ZeroSupervised bool `yaml:"zero_supervised"`
	// Truncated drops answers cut at max_tokens (finish_reason "length"):
	// a drafter trained on them learns to stop mid-sentence.
	Truncated bool `yaml:"truncated"`
	// ThinkMarkers drops answers with reasoning markers left in the text
	// (a second <think> block, a stray </think>) or reasoning that never
	// closed (reasoning and no answer). The markers are ThinkStart and
	// ThinkEnd, else those the spec's endpoints declare (think_start,
	// think_end in their options), else <think> and </think>.
	ThinkMarkers bool   `yaml:"think_markers"`
	ThinkStart   string `yaml:"think_start"`
	ThinkEnd     string `yaml:"think_end"`
	// EmptyAnswer drops answers whose text is empty or only whitespace and
	// that call no tool.
	EmptyAnswer bool `yaml:"empty_answer"`
	// MinCompletionTokens and MaxCompletionTokens bound the answer's length
	// in tokens (every turn generated for the record); 0 is no bound.
	MinCompletionTokens int `yaml:"min_completion_tokens"`
	MaxCompletionTokens int `yaml:"max_completion_tokens"`
	// MaxRepeatNgramRatio drops degenerate repetition: answers where more
	// than this share of the word n-grams (of RepeatNgram words, default 4)
	// repeat an earlier one in the answer, reasoning included.
	MaxRepeatNgramRatio float64 `yaml:"max_repeat_ngram_ratio"`
	RepeatNgram         int     `yaml:"repeat_ngram"`
}

// Rule names, as counted in status.
const (
	ruleZeroSupervised = "zero_supervised"
	ruleTruncated      = "truncated"
	ruleThinkMarkers   = "think_markers"
	ruleEmptyAnswer    = "empty_answer"
	ruleMinTokens      = "min_completion_tokens"
	ruleMaxTokens      = "max_completion_tokens"
	ruleRepeat         = "max_repeat_ngram_ratio"
)

// defaultNgram is the repetition rule's n-gram when none is given: four
// words repeat rarely in ordinary prose (a few percent) and almost always
// in a model stuck in a loop.
const defaultNgram = 4

// isZero reports whether no rule is set.
func (r *Rules) isZero() bool {
	return r == nil || !r.ZeroSupervised && !r.Truncated && !r.ThinkMarkers && !r.EmptyAnswer &&
		r.MinCompletionTokens == 0 && r.MaxCompletionTokens == 0 && r.MaxRepeatNgramRatio == 0
}

// check reports every out-of-range rule at once.
func (r *Rules) check(st *specs.Stage) error {
	var errs *multierror.Error
	bad := func(key, format string, args ...any) {
		errs = multierror.Append(errs, &specs.Error{Pos: st.OptionPos("rules", key), Msg: fmt.Sprintf("stage %s: rules: "+format, append([]any{st.Name}, args...)...)})
	}
	if r.MinCompletionTokens < 0 {
		bad(ruleMinTokens, "%s is %d; use a token count, 0 or more", ruleMinTokens, r.MinCompletionTokens)
	}
	if r.MaxCompletionTokens < 0 {
		bad(ruleMaxTokens, "%s is %d; use a token count, 0 or more (0: no bound)", ruleMaxTokens, r.MaxCompletionTokens)
	}
	if r.MaxCompletionTokens > 0 && r.MinCompletionTokens > r.MaxCompletionTokens {
		bad(ruleMaxTokens, "%s %d is below %s %d: every record would be dropped", ruleMaxTokens, r.MaxCompletionTokens, ruleMinTokens, r.MinCompletionTokens)
	}
	if r.MaxRepeatNgramRatio < 0 || r.MaxRepeatNgramRatio >= 1 {
		bad(ruleRepeat, "%s is %g; use a share between 0 and 1 (0.3 drops answers where 30%% of the n-grams repeat)", ruleRepeat, r.MaxRepeatNgramRatio)
	}
	if r.RepeatNgram < 0 || r.RepeatNgram > 64 {
		bad("repeat_ngram", "repeat_ngram is %d; use a number of words from 1 to 64 (default %d)", r.RepeatNgram, defaultNgram)
	}
	if (r.ThinkStart == "") != (r.ThinkEnd == "") {
		bad("think_start", "set both think_start and think_end, or neither (the endpoints' markers or <think> and </think>)")
	}
	return errs.ErrorOrNil()
}

// markers is a pair of reasoning delimiters.
type markers struct{ start, end string }

// targetMarkers returns the markers to look for: the rules' own, else
// every pair the spec's endpoints declare, else <think> and </think>.
func targetMarkers(r *Rules, spec *specs.Spec) []markers {
	if r.ThinkStart != "" {
		return []markers{{r.ThinkStart, r.ThinkEnd}}
	}
	var out []markers
	for _, ep := range spec.Endpoints {
		if ep.Options == nil {
			continue
		}
		var o struct {
			Start string `yaml:"think_start"`
			End   string `yaml:"think_end"`
		}
		if ep.Options.Decode(&o) != nil || o.Start == "" || o.End == "" {
			continue
		}
		m := markers{o.Start, o.End}
		if !containsMarkers(out, m) {
			out = append(out, m)
		}
	}
	if len(out) == 0 {
		out = []markers{{conv.ThinkStart, conv.ThinkEnd}}
	}
	return out
}

func containsMarkers(ms []markers, m markers) bool {
	for _, x := range ms {
		if x == m {
			return true
		}
	}
	return false
}

// answer is what the rules judge: the generated answer, or the final
// assistant message of a record that was not generated.
type answer struct {
	content, reasoning string
	toolCalls          int
	finish             string
	tokens             int
	generated          bool
}

func answerOf(rec *conv.Record) answer {
	if g := rec.Generation; g != nil {
		return answer{content: g.Content, reasoning: g.Reasoning, toolCalls: len(g.ToolCalls), finish: g.FinishReason,
			tokens: max(g.CompletionTokens, g.TotalCompletionTokens), generated: true}
	}
	if n := len(rec.Messages); n > 0 && rec.Messages[n-1].Role == conv.Assistant {
		m := rec.Messages[n-1]
		return answer{content: m.Content, reasoning: m.Reasoning, toolCalls: len(m.ToolCalls)}
	}
	return answer{}
}

// apply returns the name of the first rule that drops rec, or "".
func (r *Rules) apply(rec *conv.Record, marks []markers) string {
	a := answerOf(rec)
	switch {
	case r.ZeroSupervised && !supervised(rec):
		return ruleZeroSupervised
	case r.Truncated && a.finish == "length":
		return ruleTruncated
	case r.ThinkMarkers && leftoverThink(a, marks):
		return ruleThinkMarkers
	case r.EmptyAnswer && strings.TrimSpace(a.content) == "" && a.toolCalls == 0:
		return ruleEmptyAnswer
	// Token counts exist only for generated answers; a source answer has none.
	case a.generated && r.MinCompletionTokens > 0 && a.tokens < r.MinCompletionTokens:
		return ruleMinTokens
	case a.generated && r.MaxCompletionTokens > 0 && a.tokens > r.MaxCompletionTokens:
		return ruleMaxTokens
	case r.MaxRepeatNgramRatio > 0 && repeatRatio(a.reasoning+"\n"+a.content, r.ngram()) > r.MaxRepeatNgramRatio:
		return ruleRepeat
	}
	return ""
}

func (r *Rules) ngram() int {
	if r.RepeatNgram > 0 {
		return r.RepeatNgram
	}
	return defaultNgram
}

// supervised reports whether the training conversation has any assistant
// text, reasoning or tool call: what a loss mask would select.
func supervised(rec *conv.Record) bool {
	for _, m := range rec.Conversation() {
		if m.Role == conv.Assistant && (strings.TrimSpace(m.Content) != "" || strings.TrimSpace(m.Reasoning) != "" || len(m.ToolCalls) > 0) {
			return true
		}
	}
	return false
}

// leftoverThink reports markers left in the answer or its reasoning, or
// reasoning that never closed: a server's reasoning parser puts a trace
// that never reaches its end marker all in reasoning, with no answer.
func leftoverThink(a answer, marks []markers) bool {
	for _, m := range marks {
		for _, text := range []string{a.content, a.reasoning} {
			if strings.Contains(text, m.start) || strings.Contains(text, m.end) {
				return true
			}
		}
	}
	return strings.TrimSpace(a.reasoning) != "" && strings.TrimSpace(a.content) == "" && a.toolCalls == 0
}

// repeatRatio is the share of the text's word n-grams that repeat an
// earlier one, words compared without case. Words and n-grams are compared
// by 64-bit hashes made as the text is scanned, so memory is one integer
// per n-gram; a collision only takes a fresh n-gram for a repeat.
func repeatRatio(text string, n int) float64 {
	const offset, prime = 14695981039346656037, 1099511628211
	window := make([]uint64, 0, n)
	seen := make(map[uint64]struct{}, len(text)/6)
	total, repeated := 0, 0
	word, inWord := uint64(offset), false
	endWord := func() {
		if !inWord {
			return
		}
		if len(window) == n {
			copy(window, window[1:])
			window = window[:n-1]
		}
		window = append(window, word)
		word, inWord = offset, false
		if len(window) < n {
			return
		}
		// Order matters in an n-gram: mix each word's hash in by position.
		var g uint64 = offset
		for _, h := range window {
			g = (g ^ h) * prime
		}
		total++
		if _, ok := seen[g]; ok {
			repeated++
			return
		}
		seen[g] = struct{}{}
	}
	for _, r := range text {
		if unicode.IsSpace(r) {
			endWord()
			continue
		}
		inWord = true
		word = (word ^ uint64(unicode.ToLower(r))) * prime
	}
	endWord()
	if total == 0 {
		return 0
	}
	return float64(repeated) / float64(total)
}
