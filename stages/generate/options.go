package generate

import (
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages/generate/budget"
)

// Options of generate. Sampling settings change the answers, so they are
// part of the fingerprint; the endpoint's name, retries and timeout are not.
type Options struct {
	Endpoint string `yaml:"endpoint" fp:"-" doc:"may be left out when the spec has only one"`
	// MaxTokens caps each answer. It is always sent: servers' own defaults
	// are as low as 16 tokens.
	MaxTokens   specs.Expr `yaml:"max_tokens" eval:"int" default:"4096" doc:"always sent"`
	Temperature *float64   `yaml:"temperature" doc:"0 to 2"`
	TopP        *float64   `yaml:"top_p" doc:"above 0, at most 1"`
	TopK        *int       `yaml:"top_k" doc:"1 or more, or -1 for no limit"`
	Stop        []string   `yaml:"stop" doc:"strings that end an answer"`
	Seed        *int       `yaml:"seed" doc:"sent to the server for reproducible sampling"`
	// Retries is how many times a retryable failure is tried again.
	Retries *int `yaml:"retries" fp:"-" default:"5" doc:"times a retryable failure is tried again"`
	// Timeout is how long a request may go without a sign of life, as a Go
	// duration ("10m"): with streaming, the time since the last token;
	// without, the whole request.
	Timeout string `yaml:"timeout" fp:"-" default:"30m" doc:"counted from the last streamed token, so a long answer that keeps streaming is never cut; without streaming it bounds the whole request"`
	// Tokenizer, when set, counts the tokens of answers whose server did not
	// report usage (a model directory, as for the tokenize stage).
	Tokenizer string `yaml:"tokenizer" fp:"-" doc:"a model directory: counts the tokens of answers whose server reports no usage, and renders the later turns of multi-turn records for endpoints that take token ids"`
	// Turns is "last" (regenerate the final assistant turn) or "all"
	// (regenerate every assistant turn in order, each conditioned on the
	// target's own earlier answers).
	Turns string `yaml:"turns" default:"last" enum:"last|all" doc:"last or all, below"`
	// ToolTurns is "keep" (assistant turns with tool calls stay as the
	// source wrote them, with their recorded results) or
	// "regenerate" (with turns: all, the target answers them too: when it
	// calls the same functions the recorded results follow its calls,
	// otherwise its answer ends the conversation).
	ToolTurns string `yaml:"tool_turns" default:"keep" enum:"keep|regenerate" doc:"keep or regenerate, below"`
	// Order is "" (the store's order) or "longest_first": records whose
	// source answer is longest go first, so the run does not end waiting on
	// a few long answers started last.
	Order string `yaml:"order" fp:"-" enum:"longest_first" doc:"longest_first: records with the longest source answers first, so the run does not end on a few long answers"`
	// Share weighs this instance's part of the endpoint's capacity against
	// other instances using it.
	Share specs.Expr `yaml:"share" fp:"-" eval:"number" default:"1" doc:"weight on the endpoint"`
	// Budget stops sending requests before a limit is crossed; records not
	// sent are skipped (budget) and sent by a later run with a larger budget.
	Budget *budget.Options `yaml:"budget" fp:"-" doc:"below"`
	// Target generates until the record stages after this one (its
	// filters) have accepted a number of answers; records not needed are
	// skipped (target reached) and sent by a later run with a larger one.
	Target *TargetOptions `yaml:"target" fp:"-" doc:"{accepted, est_acceptance}: generate until the filters after it accept that many, below"`
	// ChatTemplateKwargs go to the chat template: sent with chat requests
	// (over the endpoint's options) and used for the stage's own renders.
	// They default to those of the tokenize stage generate reads from.
	ChatTemplateKwargs map[string]any `yaml:"chat_template_kwargs" doc:"sent with chat requests over the endpoint's, and used for the stage's own renders; default: the tokenize stage's"`
	// Date pins the day the stage's own renders print (as tokenize's date:,
	// which is the default).
	Date string `yaml:"date" doc:"for those renders; default: the tokenize stage's"`
}

// EndpointName is the endpoint the stage sends to (validation fills in the
// only one when the spec names none).
func (o *Options) EndpointName() string { return o.Endpoint }
