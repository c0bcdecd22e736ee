package handoff_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// qwen3 is the real Qwen3 tokenizer and chat template the tests render with.
func qwen3(t *testing.T) (string, *chat.Template) {
	t.Helper()
	return exactModel(t, "qwen3")
}

// workdir holds the test's copy of the conversations.
func workdir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile("testdata/convos.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "convos.jsonl"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// speculatorsRow is a row as speculators' prepare_data.py reads it.
type speculatorsRow struct {
	ID        string `json:"id"`
	PrimaryID string `json:"primary_id"`
	InputIDs  []int  `json:"input_ids"`
	LossMask  []int  `json:"loss_mask"`
	Metadata  struct {
		Dataset      string         `json:"dataset"`
		SourceID     string         `json:"source_id"`
		Key          string         `json:"key"`
		Turn         int            `json:"turn"`
		FinishReason string         `json:"finish_reason"`
		IDsFrom      string         `json:"ids_from"`
		PromptCheck  string         `json:"prompt_check"`
		Sampling     map[string]any `json:"sampling"`
	} `json:"metadata"`
}

// readRows reads every line of a version's shards, in shard order.
func readRows(t *testing.T, version string) [][]byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(version, "data", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no shards under %s (%v)", version, err)
	}
	sort.Strings(files)
	var lines [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for l := range bytes.SplitSeq(bytes.TrimSpace(b), []byte("\n")) {
			if len(l) > 0 {
				lines = append(lines, l)
			}
		}
	}
	return lines
}

// readSpeculators reads a version's rows in the speculators format.
func readSpeculators(t *testing.T, version string) []speculatorsRow {
	t.Helper()
	var rows []speculatorsRow
	for _, line := range readRows(t, version) {
		var r speculatorsRow
		if err := json.Unmarshal(line, &r); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		rows = append(rows, r)
	}
	return rows
}

func readRecords(t *testing.T, path string) map[string]*conv.Record {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]*conv.Record{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r conv.Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		out[r.Key] = &r
	}
	return out
}

// TestHandoff_TokenPath runs the SGLang path: the supervised ids of every
// row are exactly the server's output ids and the end-of-turn id, and its
// context is exactly what tokenize sent, which is the template's render.
func TestHandoff_TokenPath(t *testing.T) {
	tokDir, tmpl := qwen3(t)
	url := simtest.Serve(t, server.Config{Model: sim.New(sim.Config{Seed: 3, MeanTokens: 60}), Name: "target"})
	dir := workdir(t)
	spec := fmt.Sprintf(`version: 1
name: token-path
state: state.db
datasets: {d: {source: convos.jsonl, format: messages}}
endpoints: {sg: {api: sglang, urls: [%q], model: target}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: tokenize, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: %q}}
  - {name: generate, uses: generate, needs: [tokenize], foreach: datasets, with: {max_tokens: 300, temperature: 0.6}}
  - {name: gen, uses: merge, needs: [generate], with: {out: gen.jsonl, format: record}}
  - {name: handoff, uses: handoff, needs: [generate], with: {out: out, shards: 2}}
`, url, tokDir)
	enginetest.OpenAndRun(t, dir, spec)
	gens := readRecords(t, filepath.Join(dir, "gen.jsonl"))
	end, _ := tmpl.Tokens("<|im_end|>"), 0
	rows := readSpeculators(t, filepath.Join(dir, "out", "current"))
	if len(rows) != len(gens) {
		t.Fatalf("%d rows for %d generated records; want one each (turns: last)", len(rows), len(gens))
	}
	sourceIDs := map[string]bool{}
	for _, r := range rows {
		rec := gens[r.PrimaryID]
		if rec == nil {
			t.Fatalf("row %s names no generated record", r.ID)
		}
		sourceIDs[r.Metadata.SourceID] = true
		n := len(rec.PromptIDs)
		if !slices.Equal(r.InputIDs[:n], rec.PromptIDs) {
			t.Errorf("row %s: context ids are not the ids tokenize sent", r.ID)
		}
		if want, _ := tmpl.Render(rec.Prompt(), rec.Tools, true); tmpl.Tokenizer().Decode(r.InputIDs[:n]) != want {
			t.Errorf("row %s: context does not decode to the template's render", r.ID)
		}
		want := slices.Clone(rec.Generation.OutputIDs)
		if rec.Generation.FinishReason != "length" {
			want = append(want, end...)
		}
		if !slices.Equal(r.InputIDs[n:], want) {
			t.Errorf("row %s: supervised ids are not the server's output ids and <|im_end|>", r.ID)
		}
		for i, m := range r.LossMask {
			if m != btoi(i >= n) {
				t.Fatalf("row %s: loss_mask[%d] = %d; want 0 over the %d context ids, 1 after", r.ID, i, m, n)
			}
		}
		if r.Metadata.IDsFrom != "server" || r.Metadata.PromptCheck != "exact" {
			t.Errorf("row %s: ids_from %q, prompt_check %q; want server, exact", r.ID, r.Metadata.IDsFrom, r.Metadata.PromptCheck)
		}
	}
	for _, id := range []string{"plain-1", "sys-1", "multi-1", "42", "tool-2", "multi-2"} {
		if !sourceIDs[id] {
			t.Errorf("no row carries source_id %q", id)
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestHandoff_ChatPathTurnsAll answers every assistant turn through the
// chat path (no ids from the server): one row per generated turn, each
// decoding to the template's render of that turn's context and answer,
// supervised from where the answer starts; turns the source wrote (its
// tool call) are context only.
func TestHandoff_ChatPathTurnsAll(t *testing.T) {
	tokDir, tmpl := qwen3(t)
	url := simtest.Serve(t, server.Config{Model: sim.New(sim.Config{Seed: 5, MeanTokens: 50, Reasoning: 0.3, ToolCallRate: 0.5}), Name: "target"})
	dir := workdir(t)
	spec := fmt.Sprintf(`version: 1
name: chat-path
state: state.db
datasets: {d: {source: convos.jsonl, format: messages}}
endpoints: {chat: {api: openai, urls: [%q], model: target}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 400, turns: all}}
  - {name: gen, uses: merge, needs: [generate], with: {out: gen.jsonl, format: record}}
  - {name: handoff, uses: handoff, needs: [generate], with: {out: out, tokenizer: %q}}
`, url+"/v1", tokDir)
	enginetest.OpenAndRun(t, dir, spec)
	gens := readRecords(t, filepath.Join(dir, "gen.jsonl"))
	wantRows := 0
	for _, rec := range gens {
		wantRows += 1 + len(rec.Generation.Turns)
	}
	rows := readSpeculators(t, filepath.Join(dir, "out", "current"))
	if len(rows) != wantRows {
		t.Fatalf("%d rows; want %d, one per generated turn", len(rows), wantRows)
	}
	multi := 0
	for _, r := range rows {
		rec := gens[r.PrimaryID]
		context, ans := rec.Prompt(), rec.Generation.Message()
		if r.Metadata.Turn < len(rec.Generation.Turns) {
			at := rec.Generation.Turns[r.Metadata.Turn].Message
			context, ans = rec.Messages[:at], rec.Messages[at]
			multi++
		}
		a, err := tmpl.RenderAnswer(append(slices.Clone(context), ans), rec.Tools)
		if err != nil {
			t.Fatal(err)
		}
		if got := tmpl.Tokenizer().Decode(r.InputIDs); got != a.Prompt+a.Text {
			t.Errorf("row %s decodes to\n%q\nwant the render of its context and answer\n%q", r.ID, got, a.Prompt+a.Text)
		}
		n := len(tmpl.Tokens(a.Prompt))
		if first := slices.Index(r.LossMask, 1); first != n || slices.Contains(r.LossMask[n:], 0) {
			t.Errorf("row %s: supervised from token %d; want from %d (where the answer starts) to the end", r.ID, first, n)
		}
		if r.Metadata.IDsFrom != "tokenized" {
			t.Errorf("row %s: ids_from %q; want tokenized (the chat path returns no ids without return_token_ids)", r.ID, r.Metadata.IDsFrom)
		}
		if r.Metadata.SourceID == "tool-2" && strings.Contains(tmpl.Tokenizer().Decode(supervised(r)), `"people": 2`) {
			t.Errorf("row %s supervises the source's own tool call", r.ID)
		}
	}
	if multi == 0 {
		t.Error("no row for an earlier turn; turns: all must give one row per generated turn")
	}
}

// supervised returns a row's ids under loss_mask 1.
func supervised(r speculatorsRow) []int {
	var ids []int
	for i, m := range r.LossMask {
		if m == 1 {
			ids = append(ids, r.InputIDs[i])
		}
	}
	return ids
}

// TestHandoff_ChatPathPromptIDs: a chat server that returns the prompt's
// ids (vLLM's return_token_ids) gives rows whose context is exactly those
// ids, checked "exact", and whose answer is the server's output ids.
func TestHandoff_ChatPathPromptIDs(t *testing.T) {
	tokDir, tmpl := qwen3(t)
	url := simtest.Serve(t, server.Config{Model: sim.New(sim.Config{Seed: 6, MeanTokens: 40}), Name: "target"})
	dir := workdir(t)
	spec := fmt.Sprintf(`version: 1
name: chat-ids
state: state.db
datasets: {d: {source: convos.jsonl, format: messages}}
endpoints: {chat: {api: openai, urls: [%q], model: target, options: {stream: true, return_token_ids: true}}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: generate, uses: generate, needs: [load], foreach: datasets, with: {max_tokens: 200}}
  - {name: gen, uses: merge, needs: [generate], with: {out: gen.jsonl, format: record}}
  - {name: handoff, uses: handoff, needs: [generate], with: {out: out, tokenizer: %q}}
`, url+"/v1", tokDir)
	enginetest.OpenAndRun(t, dir, spec)
	gens := readRecords(t, filepath.Join(dir, "gen.jsonl"))
	end := tmpl.Tokens("<|im_end|>")
	for _, r := range readSpeculators(t, filepath.Join(dir, "out", "current")) {
		g := gens[r.PrimaryID].Generation
		n := len(g.PromptIDs)
		want := append(slices.Clone(g.PromptIDs), g.OutputIDs...)
		if g.FinishReason != "length" {
			want = append(want, end...)
		}
		if n == 0 || !slices.Equal(r.InputIDs, want) || r.Metadata.PromptCheck != "exact" || r.Metadata.IDsFrom != "server" {
			t.Errorf("row %s: want the server's prompt ids (%d), output ids and <|im_end|>, checked exact from the server; got %d ids, %s, %s",
				r.ID, n, len(r.InputIDs), r.Metadata.PromptCheck, r.Metadata.IDsFrom)
		}
	}
}
