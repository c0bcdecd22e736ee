package main

import (
	"context"
	"encoding/json"

	"github.com/eaglet-dev/eaglet/internal/dataset"
)

func init() {
	register(command{
		name:    "render",
		summary: "render JSONL conversations with a model's chat template",
		run:     runRender,
		examples: []example{
			{"render chat rows with the model's template: text, input_ids, loss_mask", "eaglet render --tokenizer internal/tokenizer/testdata/qwen3 --date 2026-03-14 < chats.jsonl > rendered.jsonl"},
			{"with another chat template", "eaglet render --tokenizer internal/tokenizer/testdata/qwen3 --chat-template template.jinja < chats.jsonl"},
		},
	})
}

func runRender(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "render", "--tokenizer PATH [--add-generation-prompt] [--chat-template FILE] [--date YYYY-MM-DD] [--template-kwargs JSON] < in.jsonl > out.jsonl",
		`Reads chat rows as apply_chat_template and OpenAI-compatible servers take
them ({"id", "messages", "tools"}: content a string, null or a list of
parts; reasoning_content, reasoning or thinking; tools wrapped or flat;
tool-call arguments a string or an object) and writes
{"id", "text", "input_ids", "loss_mask"} lines, in order; loss_mask is 1
on the tokens the assistant generated, its end-of-turn token included.
A row that cannot be rendered is written as {"id", "error"}, reported on
stderr with its line, and makes the exit status 1.`)
	path := fs.String("tokenizer", "", "model directory or tokenizer file (required)")
	addGen := fs.Bool("add-generation-prompt", false, "end with the prompt for the assistant's next answer")
	cf := addChatFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	tok, err := loadTokenizer(fs, *path)
	if err != nil {
		return err
	}
	tmpl, err := cf.compile(env, "render", tok, *path)
	if err != nil {
		return err
	}
	type out struct {
		ID       json.RawMessage `json:"id"`
		Text     string          `json:"text"`
		InputIDs []int           `json:"input_ids"`
		LossMask []int           `json:"loss_mask"`
	}
	return mapJSONL(ctx, env, func(line []byte, id json.RawMessage) (any, error) {
		rec, err := dataset.DecodeChat(line)
		if err != nil {
			return nil, err
		}
		enc, err := tmpl.Encode(rec.Messages, rec.Tools, *addGen)
		if err != nil {
			return nil, err
		}
		return out{ID: id, Text: enc.Text, InputIDs: enc.IDs, LossMask: enc.LossMask}, nil
	})
}
