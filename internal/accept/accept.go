// Package accept measures what a drafter bought: how many of its draft
// tokens a speculative-decoding server's target accepted. It reads what
// the servers report (SGLang's per-request meta_info, vLLM's Prometheus
// counters), holds the results table's row, and computes reports as pure
// functions of rows: acceptance length and throughput broken down by
// dataset, turn, context length and segment, one drafter against another
// on the same prompts, and the speed-up over the target alone.
package accept

import "time"

// Measurement is what a server reported of speculative decoding over one
// request (SGLang) or one group of requests (vLLM).
type Measurement struct {
	// CompletionTokens counts the tokens the requests produced.
	CompletionTokens int
	// Verify counts the target's verify steps, each checking one round
	// of drafts (SGLang's spec_verify_ct, vLLM's spec_decode_num_drafts).
	// The first token comes from the prefill, not from a verify step.
	Verify int
	// Accepted and Drafted count draft tokens accepted and proposed, when
	// the server reported them (Counted): SGLang before 0.5 reports
	// spec_verify_ct alone.
	Accepted, Drafted int
	Counted           bool
	// PerPosition[j] counts verify steps that accepted the draft token at
	// position j, when the server reported it (nil otherwise).
	PerPosition []int
}

// Segment is the part of an answer a measurement covers.
type Segment string

// Segments of an answer; the zero Segment is the whole answer.
const (
	Whole     Segment = ""
	Reasoning Segment = "reasoning"
	Content   Segment = "content"
	ToolCall  Segment = "tool_call"
)

// Row is one row of the results table: one request measured, or one
// group of requests measured together when the server reports per group
// (vLLM), with what identifies it and what breaks it down.
type Row struct {
	// Drafter identifies the drafter by the hash of its files
	// (DrafterID); "" is the baseline, the target alone. Name is what the
	// spec calls it, for reports; it is no part of its identity.
	Drafter, Name string
	// Target identifies the target model and Sampling the sampling
	// settings, as the stage names them ("temperature=0").
	Target, Sampling string
	// Prompt is the prompt's key; a group's key names its prompts.
	Prompt string
	// Dataset is the dataset the prompt came from.
	Dataset string
	// Turn is the answer's turn in its conversation, 1 for the first; 0
	// when unknown.
	Turn int
	// ContextTokens is the prompt's length in tokens.
	ContextTokens int
	// Segment is the part of the answer measured.
	Segment Segment
	// Requests counts the requests measured: 1, or a group's size.
	Requests int
	Measurement
	// Latency is the request's time from sent to last token; a group's
	// is the sum over its requests.
	Latency time.Duration
}
