package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"sync"

	"github.com/eaglet-dev/eaglet/internal/dataset"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
)

func init() {
	register(command{
		name:    "tokenize",
		summary: "encode JSONL texts with a model's tokenizer",
		run:     runTokenize,
		examples: []example{
			{"encode a text with a model's tokenizer", `echo '{"id": 1, "text": "Hello, world"}' | eaglet tokenize --tokenizer internal/tokenizer/testdata/qwen3`},
			{"the prompt ids of chat rows, thinking off", `eaglet tokenize --tokenizer internal/tokenizer/testdata/qwen3 --template-kwargs '{"enable_thinking": false}' < chats.jsonl > ids.jsonl`},
		},
	})
}

func runTokenize(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "tokenize", "--tokenizer PATH [--add-special-tokens] [--chat-template FILE] [--date YYYY-MM-DD] [--template-kwargs JSON] < in.jsonl > out.jsonl",
		`Reads {"id": ..., "text": ...} lines and writes {"id": ..., "ids": [...]} lines, in order.
A line with "messages" instead of "text" (a chat row, as render reads
them) is rendered with the chat template and the generation prompt and
encoded: the prompt ids the tokenize stage makes. A row that cannot be
encoded is written as {"id", "error"}, reported on stderr with its line,
and makes the exit status 1.
PATH is a model directory (tokenizer.json[.gz], tokenizer_config.json) or a tokenizer file.`)
	path := fs.String("tokenizer", "", "model directory or tokenizer file (required)")
	addSpecial := fs.Bool("add-special-tokens", false, "add the post-processor's tokens (BOS for most models) to text rows; chat templates hold their own")
	cf := addChatFlags(fs)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	tok, err := loadTokenizer(fs, *path)
	if err != nil {
		return err
	}
	// Text-only input needs no chat template: a tokenizer without one
	// fails only the chat rows.
	var tmpl *chat.Template
	tmplErr := fmt.Errorf("%s has no chat template for chat rows; pass --chat-template", *path)
	if *cf.template != "" || tok.Config().ChatTemplate != "" {
		if tmpl, err = cf.compile(env, "tokenize", tok, *path); err != nil {
			return err
		}
		tmplErr = nil
	}
	type in struct {
		Text     *string         `json:"text"`
		Messages json.RawMessage `json:"messages"`
	}
	type out struct {
		ID  json.RawMessage `json:"id"`
		IDs []int           `json:"ids"`
	}
	return mapJSONL(ctx, env, func(line []byte, id json.RawMessage) (any, error) {
		var r in
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, err
		}
		switch {
		case r.Text != nil:
			return out{ID: id, IDs: tok.Encode(*r.Text, *addSpecial)}, nil
		case r.Messages == nil:
			return nil, errors.New(`missing "text" (or "messages" for a chat row)`)
		}
		if tmplErr != nil {
			return nil, tmplErr
		}
		rec, err := dataset.DecodeChat(line)
		if err != nil {
			return nil, err
		}
		ids, err := tmpl.PromptIDs(rec.Messages, rec.Tools)
		if err != nil {
			return nil, err
		}
		return out{ID: id, IDs: ids}, nil
	})
}

// parseFlags parses a command's flags, which take no positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return &exitError{code: exitOK, err: errors.New("")}
		}
		return &exitError{code: exitUsage, err: errors.New("")}
	}
	if fs.NArg() > 0 {
		fs.Usage()
		return &exitError{code: exitUsage, err: fmt.Errorf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

func loadTokenizer(fs *flag.FlagSet, path string) (*tokenizer.Tokenizer, error) {
	if path == "" {
		fs.Usage()
		return nil, &exitError{code: exitUsage, err: errors.New("--tokenizer is required")}
	}
	return tokenizer.Load(path)
}

// mapJSONL applies fn to each line of stdin, with the line's "id", and
// writes the results as JSONL in input order. Lines are processed a batch
// at a time on every core. A line fn rejects is written as {"id", "error"}
// and reported on stderr as stdin:LINE; the rest go on, and the command
// then fails with exit status 1.
func mapJSONL(ctx context.Context, env *cmdEnv, fn func(line []byte, id json.RawMessage) (any, error)) error {
	sc := bufio.NewScanner(env.stdin)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	w := bufio.NewWriter(env.stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	const batch = 256
	workers := runtime.GOMAXPROCS(0)
	lineNo, rows, bad := 0, 0, 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		var lines [][]byte
		var nums []int
		for len(lines) < batch && sc.Scan() {
			lineNo++
			if b := bytes.TrimSpace(sc.Bytes()); len(b) > 0 {
				lines = append(lines, bytes.Clone(b))
				nums = append(nums, lineNo)
			}
		}
		if err := sc.Err(); err != nil {
			return fmt.Errorf("read stdin: %w", err)
		}
		if len(lines) == 0 {
			break
		}
		rows += len(lines)
		results := make([]any, len(lines))
		errs := make([]error, len(lines))
		ids := make([]json.RawMessage, len(lines))
		var wg sync.WaitGroup
		for k := range workers {
			wg.Go(func() {
				for i := k; i < len(lines); i += workers {
					var row struct {
						ID json.RawMessage `json:"id"`
					}
					if errs[i] = json.Unmarshal(lines[i], &row); errs[i] == nil {
						ids[i] = row.ID
						results[i], errs[i] = fn(lines[i], row.ID)
					}
				}
			})
		}
		wg.Wait()
		for i, r := range results {
			if errs[i] != nil {
				bad++
				fmt.Fprintf(env.stderr, "stdin:%d: %v\n", nums[i], errs[i])
				r = struct {
					ID    json.RawMessage `json:"id"`
					Error string          `json:"error"`
				}{ids[i], errs[i].Error()}
			}
			if err := enc.Encode(r); err != nil {
				return fmt.Errorf("write stdout: %w", err)
			}
		}
	}
	if bad > 0 {
		return &exitError{code: exitFailure, err: fmt.Errorf("%d of %d lines failed (listed above; their output lines hold the error)", bad, rows)}
	}
	return nil
}
