package generate

import "github.com/eaglet-dev/eaglet/internal/conv"

// promptTokens is the prompt's length: counted by tokenize, else guessed
// from its characters (about four per token).
func promptTokens(rec *conv.Record) int {
	if rec.PromptTokens > 0 {
		return rec.PromptTokens
	}
	if len(rec.PromptIDs) > 0 {
		return len(rec.PromptIDs)
	}
	chars := 0
	for _, m := range rec.Prompt() {
		chars += len(m.Content)
	}
	return chars/4 + 1
}

// sentTokens is how many prompt tokens a request sent, when eaglet knows
// exactly: the token ids, or the tokenize stage's count of the record's own
// prompt on its first request (later ones carry the target's answers); 0
// when unknown.
func sentTokens(rec *conv.Record, msgs []conv.Message, ids []int, steps int) int {
	if len(ids) > 0 {
		return len(ids)
	}
	if steps == 1 && len(msgs) == len(rec.Prompt()) {
		return rec.PromptTokens
	}
	return 0
}

// exactPromptTokens is the prompt's length when the tokenize stage counted
// it, else 0: skipping a record on a guess would lose good records.
func exactPromptTokens(rec *conv.Record) int {
	if len(rec.PromptIDs) > 0 {
		return len(rec.PromptIDs)
	}
	return rec.PromptTokens
}
