package generate

import (
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
)

func TestRecount_TokensTheServerDidNotReport(t *testing.T) {
	tok, err := tokenizer.Load("../../internal/tokenizer/testdata/qwen3")
	if err != nil {
		t.Fatal(err)
	}
	a := &answerer{tok: tok}
	text := "Hello, world! The answer is 42."
	want := len(tok.Encode(text, false)) + 1 // and the end-of-turn token
	gen := &conv.Generation{Content: text, FinishReason: "stop"}
	a.recount(gen)
	if gen.CompletionTokens != want {
		t.Errorf("recounted %d tokens; want %d", gen.CompletionTokens, want)
	}
	reported := &conv.Generation{Content: text, CompletionTokens: 99}
	a.recount(reported)
	if reported.CompletionTokens != 99 {
		t.Error("a count the server reported was replaced")
	}
	ids := &conv.Generation{Content: text, OutputIDs: []int{1, 2, 3}, FinishReason: "length"}
	a.recount(ids)
	if ids.CompletionTokens != 3 {
		t.Errorf("with output ids and no usage: %d tokens; want 3", ids.CompletionTokens)
	}
}
