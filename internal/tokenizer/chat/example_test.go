package chat_test

import (
	"fmt"
	"log"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
)

// Encode marks what the assistant generated: Qwen3's template adds an empty
// thinking block to the last answer, which the model produces itself.
func ExampleTemplate_Encode() {
	tok, err := tokenizer.Load("../testdata/qwen3")
	if err != nil {
		log.Fatal(err)
	}
	tmpl, err := chat.New(tok)
	if err != nil {
		log.Fatal(err)
	}
	enc, err := tmpl.Encode([]conv.Message{
		{Role: conv.User, Content: "Hi"},
		{Role: conv.Assistant, Content: "Hello!"},
	}, nil, false)
	if err != nil {
		log.Fatal(err)
	}
	for i, id := range enc.IDs {
		fmt.Printf("%d %q\n", enc.LossMask[i], tok.Decode([]int{id}))
	}
	// Output:
	// 0 "<|im_start|>"
	// 0 "user"
	// 0 "\n"
	// 0 "Hi"
	// 0 "<|im_end|>"
	// 0 "\n"
	// 0 "<|im_start|>"
	// 0 "assistant"
	// 0 "\n"
	// 1 "<think>"
	// 1 "\n\n"
	// 1 "</think>"
	// 1 "\n\n"
	// 1 "Hello"
	// 1 "!"
	// 1 "<|im_end|>"
	// 0 "\n"
}
