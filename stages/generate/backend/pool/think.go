package pool

import "strings"

// Think tags a thinking model writes around its reasoning when no
// reasoning parser runs on the server.
const (
	ThinkStart = "<think>"
	ThinkEnd   = "</think>"
)

// SplitThink separates inline reasoning from the answer. Templates that put
// the opening tag in the prompt leave only the closing one in the output; an
// answer cut off while thinking has only the opening one. Text without
// either is all answer.
func SplitThink(text, start, end string) (reasoning, content string) {
	if start == "" {
		start, end = ThinkStart, ThinkEnd
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

// TrimStop removes trailing end-of-turn ids so recorded output ids never
// include them, whichever server produced them.
func TrimStop(ids []int, stop ...int) []int {
	for len(ids) > 0 {
		last, found := ids[len(ids)-1], false
		for _, s := range stop {
			if s == last {
				found = true
				break
			}
		}
		if !found {
			break
		}
		ids = ids[:len(ids)-1]
	}
	return ids
}
