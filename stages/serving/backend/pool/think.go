package pool

import (
	"slices"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

// SplitThink separates inline reasoning from the answer. Templates that put
// the opening tag in the prompt leave only the closing one in the output; an
// answer cut off while thinking has only the opening one. Text without
// either is all answer.
func SplitThink(text, start, end string) (reasoning, content string) {
	if start == "" {
		start, end = conv.ThinkStart, conv.ThinkEnd
	}
	if before, after, ok := strings.Cut(text, end); ok {
		before = strings.TrimSpace(before)
		if r, ok := strings.CutPrefix(before, start); ok {
			before = r
		}
		return strings.TrimSpace(before), strings.TrimLeft(after, " \t\r\n")
	}
	trimmed := strings.TrimLeft(text, " \t\r\n")
	if r, ok := strings.CutPrefix(trimmed, start); ok {
		return strings.TrimSpace(r), ""
	}
	return "", text
}

// TrimStop returns an answer's output ids without the stop id the model
// ended on, whichever server produced them: SGLang's /generate and vLLM
// include it, others do not. An answer cut at max_tokens ("length") ended
// on no stop id and keeps every id. matched is the id the server says it
// stopped on (-1: none said); every list holds further stop ids (the
// endpoint's stop_token_ids, the model's own).
func TrimStop(ids []int, finish string, matched int, stop ...[]int) []int {
	if finish == "length" || len(ids) == 0 {
		return ids
	}
	last := ids[len(ids)-1]
	if last == matched && matched >= 0 {
		return ids[:len(ids)-1]
	}
	for _, s := range stop {
		if slices.Contains(s, last) {
			return ids[:len(ids)-1]
		}
	}
	return ids
}
