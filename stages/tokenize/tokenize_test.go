package tokenize_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
	_ "github.com/eaglet-dev/eaglet/stages/all"
)

func TestTokenize_PromptIDsAndMaxPromptTokens(t *testing.T) {
	dir := t.TempDir()
	tokDir, _ := filepath.Abs("../../internal/tokenizer/testdata/qwen3")
	short := []conv.Message{{Role: conv.User, Content: "What is 2+2?"}}
	long := []conv.Message{{Role: conv.User, Content: strings.Repeat("a long question ", 200)}}
	var data bytes.Buffer
	for _, m := range [][]conv.Message{short, long} {
		b, _ := json.Marshal(map[string]any{"messages": m})
		data.Write(append(b, '\n'))
	}
	os.WriteFile(filepath.Join(dir, "d.jsonl"), data.Bytes(), 0o644)
	spec := `version: 1
name: tok
state: state.db
datasets: {d: {source: d.jsonl}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: tokenize, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: "` + tokDir + `", max_prompt_tokens: 100}}
  - {name: merge, uses: merge, needs: [tokenize], with: {out: out.jsonl, format: record}}
`
	_, store, _ := enginetest.OpenAndRun(t, dir, spec)
	tok, err := tokenizer.Load(tokDir)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chat.New(tok)
	if err != nil {
		t.Fatal(err)
	}
	want, err := tmpl.PromptIDs(short, nil)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	lines := bytes.Split(bytes.TrimSpace(out), []byte("\n"))
	if len(lines) != 1 {
		t.Fatalf("%d records passed; want only the short prompt", len(lines))
	}
	var rec conv.Record
	json.Unmarshal(lines[0], &rec)
	if rec.PromptTokens != len(want) || len(rec.PromptIDs) != len(want) || rec.PromptIDs[0] != want[0] {
		t.Errorf("prompt ids %v (%d tokens); want %v", rec.PromptIDs, rec.PromptTokens, want)
	}
	counts, _ := store.Counts("tokenize[d]")
	dropped := ""
	for _, c := range counts {
		if c.Status == 1 {
			dropped = c.Reason
		}
	}
	if dropped != "prompt over max_prompt_tokens (100)" {
		t.Errorf("the long prompt was not dropped with its reason (got %q)", dropped)
	}
}
