package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
)

func init() {
	register(command{name: "render", summary: "render JSONL conversations with a model's chat template", run: runRender})
}

func runRender(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "render", "--tokenizer PATH [--add-generation-prompt] [--chat-template FILE] < in.jsonl > out.jsonl",
		`Reads {"id": ..., "messages": [...], "tools": [...]} lines and writes
{"id", "text", "ids", "loss_mask"} lines, in order; loss_mask is 1 on the
tokens the assistant generated, its end-of-turn token included.`)
	path := fs.String("tokenizer", "", "model directory or tokenizer file (required)")
	addGen := fs.Bool("add-generation-prompt", false, "end with the prompt for the assistant's next answer")
	templateFile := fs.String("chat-template", "", "Jinja file to use instead of the tokenizer's chat template")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	tok, err := loadTokenizer(fs, *path)
	if err != nil {
		return err
	}
	var opts []chat.Option
	if *templateFile != "" {
		src, err := os.ReadFile(*templateFile)
		if err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("--chat-template: %w", err)}
		}
		opts = append(opts, chat.WithSource(string(src)))
	}
	tmpl, err := chat.New(tok, opts...)
	if errors.Is(err, chat.ErrNoTemplate) {
		return &exitError{code: exitUsage, err: fmt.Errorf("%s has no chat template; pass --chat-template", *path)}
	} else if err != nil {
		return err
	}
	type in struct {
		ID       json.RawMessage `json:"id"`
		Messages []conv.Message  `json:"messages"`
		Tools    []conv.ToolDef  `json:"tools"`
	}
	type out struct {
		ID       json.RawMessage `json:"id"`
		Text     string          `json:"text"`
		IDs      []int           `json:"ids"`
		LossMask []int           `json:"loss_mask"`
	}
	return mapJSONL(ctx, env, func(line []byte) (any, error) {
		var r in
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, err
		}
		enc, err := tmpl.Encode(r.Messages, r.Tools, *addGen)
		if err != nil {
			return nil, err
		}
		return out{ID: r.ID, Text: enc.Text, IDs: enc.IDs, LossMask: enc.LossMask}, nil
	})
}
