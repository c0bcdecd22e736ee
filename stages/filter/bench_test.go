package filter

import (
	"fmt"
	"strings"
	"testing"
)

// BenchmarkRules: every rule over a 2,000-token answer (about 1,500 words
// of reasoning and answer), the cost a filter adds per record.
func BenchmarkRules(b *testing.B) {
	var words []string
	for i := range 1500 {
		words = append(words, fmt.Sprintf("w%d", i*7919%10007))
	}
	rec := generated(strings.Join(words[:500], " "), strings.Join(words[500:], " "), "stop", 2000)
	r := &Rules{ZeroSupervised: true, Truncated: true, ThinkMarkers: true, EmptyAnswer: true,
		MinCompletionTokens: 16, MaxCompletionTokens: 8000, MaxRepeatNgramRatio: 0.3}
	marks := []markers{{"<think>", "</think>"}}
	b.ReportAllocs()
	for b.Loop() {
		if got := r.apply(rec, marks); got != "" {
			b.Fatalf("dropped by %s", got)
		}
	}
}
