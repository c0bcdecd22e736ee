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

	"github.com/eaglet-dev/eaglet/internal/tokenizer"
)

func init() {
	register(command{name: "tokenize", summary: "encode JSONL texts with a model's tokenizer", run: runTokenize})
}

func runTokenize(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "tokenize", "--tokenizer PATH [--add-special-tokens] < in.jsonl > out.jsonl",
		`Reads {"id": ..., "text": ...} lines and writes {"id": ..., "ids": [...]} lines, in order.
PATH is a model directory (tokenizer.json[.gz], tokenizer_config.json) or a tokenizer file.`)
	path := fs.String("tokenizer", "", "model directory or tokenizer file (required)")
	addSpecial := fs.Bool("add-special-tokens", false, "add the post-processor's tokens (BOS for most models)")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	tok, err := loadTokenizer(fs, *path)
	if err != nil {
		return err
	}
	type in struct {
		ID   json.RawMessage `json:"id"`
		Text *string         `json:"text"`
	}
	type out struct {
		ID  json.RawMessage `json:"id"`
		IDs []int           `json:"ids"`
	}
	return mapJSONL(ctx, env, func(line []byte) (any, error) {
		var r in
		if err := json.Unmarshal(line, &r); err != nil {
			return nil, err
		}
		if r.Text == nil {
			return nil, errors.New(`missing "text"`)
		}
		return out{ID: r.ID, IDs: tok.Encode(*r.Text, *addSpecial)}, nil
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

// mapJSONL applies fn to each line of stdin and writes the results as JSONL
// in input order. Lines are processed a batch at a time on every core; a
// line fn rejects stops the run with its line number.
func mapJSONL(ctx context.Context, env *cmdEnv, fn func(line []byte) (any, error)) error {
	sc := bufio.NewScanner(env.stdin)
	sc.Buffer(make([]byte, 0, 1<<20), 256<<20)
	w := bufio.NewWriter(env.stdout)
	defer w.Flush()
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	const batch = 256
	workers := runtime.GOMAXPROCS(0)
	lineNo := 0
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
			return nil
		}
		results := make([]any, len(lines))
		errs := make([]error, len(lines))
		var wg sync.WaitGroup
		for k := range workers {
			wg.Go(func() {
				for i := k; i < len(lines); i += workers {
					results[i], errs[i] = fn(lines[i])
				}
			})
		}
		wg.Wait()
		for i, r := range results {
			if errs[i] != nil {
				return fmt.Errorf("stdin line %d: %w", nums[i], errs[i])
			}
			if err := enc.Encode(r); err != nil {
				return fmt.Errorf("write stdout: %w", err)
			}
		}
	}
}
