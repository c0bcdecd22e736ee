package budget

import (
	"sync/atomic"
	"time"

	"github.com/eaglet-dev/eaglet/stages/generate/answerlen"
	"github.com/eaglet-dev/eaglet/stages/generate/backend"
)

// Ticket is one admitted record: one request, or one per turn it answers.
type Ticket struct {
	b      *Budget
	prompt int
	// answers is how many answers the record asks for. The length model
	// is of one answer; a record of k answers is expected to produce k of
	// them. A two-question record must not be priced as one answer, nor
	// taken as done once it passes max_tokens.
	answers int
	// What the answer in progress has shown is updated without the
	// budget's lock: streaming callbacks must never wait behind admission
	// decisions, or the decisions would see stale progress and expect
	// running answers to be shorter than they are.
	//
	// base is the tokens of the record's earlier answers (turns); tokens,
	// exact and chars are the current answer's backend.Progress; streamed
	// says it has shown any; sent is when it left and seen when it last
	// showed progress (clock nanoseconds).
	base, tokens, chars, sent, seen atomic.Int64
	exact, streamed                 atomic.Bool
}

// SentNow records that the current answer's request left for the server,
// after base tokens of the record's earlier answers.
func (t *Ticket) SentNow(base int) {
	t.base.Store(int64(base))
	t.tokens.Store(0)
	t.chars.Store(0)
	t.exact.Store(false)
	t.streamed.Store(false)
	now := t.b.now().UnixNano()
	t.sent.Store(now)
	t.seen.Store(now)
}

// Update records what the current answer has shown, after base tokens of
// the record's earlier answers.
func (t *Ticket) Update(base int, p backend.Progress) {
	t.base.Store(int64(base))
	t.tokens.Store(int64(p.Tokens))
	t.chars.Store(int64(p.Chars))
	t.exact.Store(p.Exact)
	t.seen.Store(t.b.now().UnixNano())
	if p.Tokens > 0 || p.Chars > 0 {
		t.streamed.Store(true)
	}
}

// produced estimates the tokens the record has produced so far: what it
// last showed, and what it has made since at the pace answers go. Progress
// shown is always somewhat old: a client short of CPU, or stalled, reads
// the streams late, and an answer that finishes while others' chunks wait
// unread frees its room for decisions that take those others as shorter
// than they are. Counting their time since closes that gap.
func (t *Ticket) produced(now time.Time, pc *answerlen.Pace) int {
	n := int(t.base.Load())
	switch {
	case t.exact.Load():
		n += int(t.tokens.Load())
	case t.streamed.Load():
		n += max(int(t.tokens.Load()), pc.TokensOf(int(t.chars.Load())))
	}
	if s := t.seen.Load(); s != 0 {
		n += pc.TokensIn(now.Sub(time.Unix(0, s)))
	}
	return n
}

// Finish records what a request really cost and frees its place; a failed
// request (completion < 0) costs nothing and teaches nothing.
func (t *Ticket) Finish(prompt, completion int) {
	b := t.b
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.inflight, t)
	if completion >= 0 {
		for _, l := range b.limits {
			l.spent += l.Cost(prompt, float64(completion), 1)
		}
		b.records++
		b.lengths.Add(completion / t.answers)
		if t.base.Load() == 0 && completion > 0 {
			// One answer: its text and time say what a token is worth.
			b.pace.LearnText(int(t.chars.Load()), completion)
			if s := t.sent.Load(); s != 0 {
				b.pace.LearnTime(completion, b.now().Sub(time.Unix(0, s)))
			}
		}
	}
	b.changed.Signal()
}
