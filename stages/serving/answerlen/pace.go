package answerlen

import "time"

// Pace converts what a running answer shows into tokens when the server
// does not count them: text by the characters a token has been worth in
// finished answers (their usage), time by the tokens per second a
// sequence has been producing. Under-counting a running answer is what
// makes a budget overshoot (answers in flight look short, so too many are
// admitted), and counting stream events as tokens under-counted by the
// number of tokens a server puts in one event.
type Pace struct {
	chars, textTokens float64
	// tokens and seconds decay with each answer learned from, so the rate
	// follows the batch: a sequence decodes faster as the batch shrinks
	// near the end of a budget, just when it matters.
	tokens, seconds float64
}

// Before any answer has finished, a token is taken as 3 characters (most
// tokenizers give 3.5 to 4.5 on English): over-counting errs on the side
// of the budget. The prior weighs as much as one short answer.
const (
	priorCharsPerToken = 3
	priorTextTokens    = 100
	// rateDecay keeps about the last 50 answers in the rate.
	rateDecay = 0.98
)

// NewPace returns a pace that knows only its prior.
func NewPace() Pace {
	return Pace{chars: priorCharsPerToken * priorTextTokens, textTokens: priorTextTokens}
}

// LearnText learns from a finished answer of chars characters and tokens tokens.
func (p *Pace) LearnText(chars, tokens int) {
	if chars > 0 {
		p.chars += float64(chars)
		p.textTokens += float64(tokens)
	}
}

// LearnTime learns from a finished answer of tokens tokens that took took.
func (p *Pace) LearnTime(tokens int, took time.Duration) {
	if took > 0 {
		p.tokens = p.tokens*rateDecay + float64(tokens)
		p.seconds = p.seconds*rateDecay + took.Seconds()
	}
}

// TokensOf estimates the tokens in chars characters of an answer.
func (p *Pace) TokensOf(chars int) int {
	return int(float64(chars) * p.textTokens / p.chars)
}

// TokensIn estimates the tokens an answer produces in d; nothing before
// any answer has said how fast the server goes.
func (p *Pace) TokensIn(d time.Duration) int {
	if p.seconds <= 0 || d <= 0 {
		return 0
	}
	return int(d.Seconds() * p.tokens / p.seconds)
}
