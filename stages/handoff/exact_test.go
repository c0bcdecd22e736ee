package handoff_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
)

// exactPath is one way of reaching the target: its API, options, and
// whether the prompt goes as the tokenize stage's ids.
type exactPath struct {
	name      string
	endpoint  string // the endpoint's YAML, %s its URL
	ids       bool   // prompts sent as token ids (SGLang /generate, /v1/completions)
	serverIDs bool   // the server returns output ids
}

var exactPaths = []exactPath{
	{"generate", `{api: sglang, urls: [%q], model: target}`, true, true},
	{"generate-stream", `{api: sglang, urls: [%q], model: target, options: {stream: true}}`, true, true},
	{"chat", `{api: openai, urls: ["%s/v1"], model: target}`, false, false},
	{"chat-stream", `{api: openai, urls: ["%s/v1"], model: target, options: {stream: true}}`, false, false},
	{"chat-ids", `{api: openai, urls: ["%s/v1"], model: target, options: {return_token_ids: true}}`, false, true},
	{"chat-ids-stream", `{api: openai, urls: ["%s/v1"], model: target, options: {stream: true, return_token_ids: true}}`, false, true},
	{"completions", `{api: openai, urls: ["%s/v1"], model: target, options: {completions: true, return_token_ids: true}}`, true, true},
}

// exactTemplates are the targets whose real tokenizer and chat template
// the rows are made with; the simulated server stops on each one's own
// end-of-turn id, as the real model does.
var exactTemplates = []string{"qwen3", "llama3", "deepseek_v3", "gpt_oss"}

// exactDate pins the day gpt-oss's template prints.
const exactDate = "2026-01-01"

// exactModel loads a target's tokenizer and chat template. gpt-oss's
// tokenizer_config carries no template, so its model directory is made
// with the template beside it, as the model's own repository has it.
func exactModel(t *testing.T, name string) (string, *chat.Template) {
	t.Helper()
	dir, err := filepath.Abs(filepath.Join("../../internal/tokenizer/testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	if name == "gpt_oss" {
		model := t.TempDir()
		for _, f := range []string{name + "/tokenizer.json.gz", name + "/tokenizer_config.json.gz", "chat/gpt_oss.jinja"} {
			b, err := os.ReadFile(filepath.Join(dir, "..", f))
			if err != nil {
				t.Fatal(err)
			}
			base := filepath.Base(f)
			if strings.HasSuffix(base, ".jinja") {
				base = "chat_template.jinja"
			}
			if err := os.WriteFile(filepath.Join(model, base), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		dir = model
	}
	tok, err := tokenizer.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	tmpl, err := chat.Pinned(tok, "", exactDate, nil, nil)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return dir, tmpl
}

// exactRecords is the shared conversations plus short prompts enough for
// answers that stop, are cut at max_tokens, call tools and reason.
func exactRecords(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile("testdata/convos.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var more strings.Builder
	tools := `[{"type":"function","function":{"name":"lookup","description":"Look a word up","parameters":{"type":"object","properties":{"word":{"type":"string"}},"required":["word"]}}}]`
	for i := range 24 {
		if i%3 == 0 {
			fmt.Fprintf(&more, `{"id":"t%d","messages":[{"role":"user","content":"What does word %d mean?"}],"tools":%s}`+"\n", i, i, tools)
			continue
		}
		fmt.Fprintf(&more, `{"id":"p%d","messages":[{"role":"user","content":"Tell me fact number %d about rivers."},{"role":"assistant","content":"A source fact."},{"role":"user","content":"And fact %d?"}]}`+"\n", i, i, i+1)
	}
	if err := os.WriteFile(filepath.Join(dir, "convos.jsonl"), append(b, more.String()...), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestHandoff_ExactRows runs every path a target is reached by against
// the simulated server stopping on each target's real end-of-turn id, and
// checks every speculators row: its context is what the server was sent
// (or said it read), and its supervised ids are the model's answer ids,
// without the stop id the server may include, followed by the template's
// end-of-turn exactly once for an answer that stopped and none for one cut
// at max_tokens. Answers stop, are cut, call tools and reason; turns: all
// gives rows for earlier turns too.
func TestHandoff_ExactRows(t *testing.T) {
	if testing.Short() {
		t.Skip("28 pipelines")
	}
	for _, name := range exactTemplates {
		tokDir, tmpl := exactModel(t, name)
		eosID, ok := tmpl.Tokenizer().TokenID(tmpl.Tokenizer().Config().EOSToken)
		if !ok {
			t.Fatalf("%s: no eos_token id", name)
		}
		stops := tmpl.StopIDs()
		for _, p := range exactPaths {
			t.Run(name+"/"+p.name, func(t *testing.T) {
				url := simtest.Serve(t, server.Config{Name: "target", Template: tmpl,
					Model: sim.New(sim.Config{Seed: 11, MeanTokens: 40, Reasoning: 0.3, ToolCallRate: 0.5, EOS: eosID})})
				dir := t.TempDir()
				exactRecords(t, dir)
				genTokenizer := ""
				if p.ids {
					genTokenizer = fmt.Sprintf(", tokenizer: %q", tokDir)
				}
				spec := fmt.Sprintf(`version: 1
name: exact
state: state.db
datasets: {d: {source: convos.jsonl, format: messages}}
endpoints: {target: %s}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: tokenize, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: %q, date: %q}}
  - {name: generate, uses: generate, needs: [tokenize], foreach: datasets, with: {max_tokens: 60, turns: all%s}}
  - {name: gen, uses: merge, needs: [generate], with: {out: gen.jsonl, format: record}}
  - {name: handoff, uses: handoff, needs: [generate], with: {out: out, tokenizer: %q, date: %q}}
`, fmt.Sprintf(p.endpoint, url), tokDir, exactDate, genTokenizer, tokDir, exactDate)
				enginetest.OpenAndRun(t, dir, spec)
				gens := readRecords(t, filepath.Join(dir, "gen.jsonl"))
				rows := readSpeculators(t, filepath.Join(dir, "out", "current"))
				var seen struct{ stopped, cut, tools, reasoning, earlier int }
				exact := 0
				for _, r := range rows {
					rec := gens[r.PrimaryID]
					if rec == nil {
						t.Fatalf("row %s names no generated record", r.ID)
					}
					a := rowAnswer(rec, r.Metadata.Turn)
					n := slices.Index(r.LossMask, 1)
					if n < 0 {
						t.Fatalf("row %s supervises nothing", r.ID)
					}
					if bad := checkContext(tmpl, rec, a, p, r.InputIDs[:n]); bad != "" {
						t.Errorf("row %s (turn %d): %s", r.ID, r.Metadata.Turn, bad)
						continue
					}
					if bad := checkAnswer(tmpl, rec, a, p, r.InputIDs[n:], stops); bad != "" {
						t.Errorf("row %s (turn %d, %s): %s", r.ID, r.Metadata.Turn, a.finish, bad)
						continue
					}
					// The server was sent (the tokenize stage's, for a record
					// answered in one request) or returned these ids: exact;
					// a render, generate's for a later turn included, is only
					// checked by the server's count.
					label := "count"
					if a.promptIDs != nil || p.ids && len(rec.Generation.Turns) == 0 {
						label = "exact"
					}
					if r.Metadata.PromptCheck != label {
						t.Errorf("row %s: prompt_check %q; want %q", r.ID, r.Metadata.PromptCheck, label)
						continue
					}
					exact++
					switch a.finish {
					case "length":
						seen.cut++
					case "tool_calls":
						seen.tools++
					default:
						seen.stopped++
					}
					if a.msg.Reasoning != "" {
						seen.reasoning++
					}
					if r.Metadata.Turn < len(rec.Generation.Turns) {
						seen.earlier++
					}
				}
				t.Logf("%d of %d rows exact (%+v)", exact, len(rows), seen)
				// The manifest counts what the rows say: how ids were made
				// and how each context was checked.
				var m struct {
					IDsFrom     map[string]int `json:"ids_from"`
					PromptCheck map[string]int `json:"prompt_check"`
				}
				b, err := os.ReadFile(filepath.Join(dir, "out", "current", "manifest.json"))
				if err != nil || json.Unmarshal(b, &m) != nil {
					t.Fatalf("manifest: %v", err)
				}
				from := map[string]int{}
				checks := map[string]int{}
				for _, r := range rows {
					from[r.Metadata.IDsFrom]++
					checks[r.Metadata.PromptCheck]++
				}
				if !maps.Equal(m.IDsFrom, from) || !maps.Equal(m.PromptCheck, checks) {
					t.Errorf("manifest ids_from %v, prompt_check %v; the rows say %v, %v", m.IDsFrom, m.PromptCheck, from, checks)
				}
				if want := map[bool]string{true: "server", false: "tokenized"}[p.serverIDs]; from[want] != len(rows) {
					t.Errorf("ids_from %v; want all %d rows %s", from, len(rows), want)
				}
				// Tool calls come parsed only on the chat path; /generate
				// returns them as text. The sim writes content before a
				// call, which gpt-oss's template refuses beside reasoning:
				// those turns are dropped, by that reason.
				wantTools := !p.ids && name != "gpt_oss"
				if seen.stopped == 0 || seen.cut == 0 || seen.tools == 0 && wantTools || seen.reasoning == 0 || seen.earlier == 0 {
					t.Errorf("answers seen: %+v; want some of every kind", seen)
				}
			})
		}
	}
}

// answerOf is one generated answer of a record, with what the server
// said of it.
type answerOf struct {
	context []conv.Message
	msg     conv.Message
	finish  string
	// ids are the server's output ids; promptIDs its prompt ids, when it
	// returned them.
	ids, promptIDs []int
	promptTokens   int
	completion     int
	first          bool
}

// rowAnswer is turn i of a record's generated answers, as the handoff
// lists them: the earlier turns, then the final one.
func rowAnswer(rec *conv.Record, i int) answerOf {
	g := rec.Generation
	if i < len(g.Turns) {
		tn := g.Turns[i]
		return answerOf{context: rec.Messages[:tn.Message], msg: rec.Messages[tn.Message], finish: tn.FinishReason,
			ids: tn.OutputIDs, promptIDs: tn.PromptIDs, promptTokens: tn.PromptTokens, completion: tn.CompletionTokens, first: i == 0}
	}
	return answerOf{context: rec.Prompt(), msg: g.Message(), finish: g.FinishReason, ids: g.OutputIDs,
		promptIDs: g.PromptIDs, promptTokens: g.PromptTokens, completion: g.CompletionTokens, first: len(g.Turns) == 0}
}

// checkContext says what is wrong with a row's context ids, "" if nothing:
// on the token-id paths they are the ids sent (the tokenize stage's for a
// record's first request, the template's render for a later turn); on the
// chat path the prompt ids the server returned, else the template's
// render; and in every case as long as the server counted.
func checkContext(tmpl *chat.Template, rec *conv.Record, a answerOf, p exactPath, got []int) string {
	render, err := tmpl.Encode(a.context, rec.Tools, true)
	if err != nil {
		return err.Error()
	}
	want := render.IDs
	switch {
	case p.ids && a.first && len(rec.Generation.Turns) == 0 && len(rec.PromptIDs) > 0:
		want = rec.PromptIDs
	case !p.ids && p.serverIDs:
		if a.promptIDs == nil {
			return "the server returned prompt ids, but the answer kept none"
		}
		want = a.promptIDs
	}
	if !slices.Equal(got, want) {
		return fmt.Sprintf("context is %d ids, not the %d the server was sent or read", len(got), len(want))
	}
	if len(got) != a.promptTokens {
		return fmt.Sprintf("context is %d ids; the server counted %d", len(got), a.promptTokens)
	}
	return ""
}

// checkAnswer says what is wrong with a row's supervised ids, "" if
// nothing: the server's ids without the stop id it ended on (or the text
// tokenized when it returned none), then one end-of-turn if it stopped.
func checkAnswer(tmpl *chat.Template, rec *conv.Record, a answerOf, p exactPath, got, stops []int) string {
	rendered, err := tmpl.RenderAnswer(append(slices.Clone(a.context), a.msg), rec.Tools)
	if err != nil {
		return err.Error()
	}
	end := tmpl.Tokens(rendered.End)
	want := tmpl.Tokens(strings.TrimSuffix(rendered.Text, rendered.End))
	if p.serverIDs {
		want = slices.Clone(a.ids)
		// What the server produced, its stop id included, is what it
		// counted as completion tokens.
		produced := len(want)
		if a.finish != "length" {
			produced++
		}
		if produced != a.completion {
			return fmt.Sprintf("%d output ids kept and %d counted by the server: the stop id is not trimmed exactly once", len(want), a.completion)
		}
	}
	if a.finish != "length" {
		want = append(want, end...)
	}
	if !slices.Equal(got, want) {
		return fmt.Sprintf("supervised ids end %v; want %v", tail(got), tail(want))
	}
	if k := len(got) - len(end) - 1; a.finish != "length" && k >= 0 && slices.Contains(stops, got[k]) {
		return fmt.Sprintf("end-of-turn twice: %v", tail(got))
	}
	if a.finish == "length" && slices.Contains(stops, got[len(got)-1]) {
		return fmt.Sprintf("an answer cut at max_tokens ends on a stop id: %v", tail(got))
	}
	return ""
}

func tail(ids []int) []int { return ids[max(0, len(ids)-4):] }

// TestHandoff_SimAgreesWithTokenize: the in-process simulator reads the
// prompt the tokenize stage encoded, so it counts every prompt as tokenize
// did: no answer is refused as truncated, and every row's re-rendered
// context is as long as the server counted.
func TestHandoff_SimAgreesWithTokenize(t *testing.T) {
	tokDir, _ := exactModel(t, "qwen3")
	dir := t.TempDir()
	for _, f := range []string{"chat.jsonl", "tools.jsonl"} {
		b, err := os.ReadFile(filepath.Join("../../specs/examples/data", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	p, store := enginetest.Open(t, dir, fmt.Sprintf(`version: 1
name: sim-tokenize
state: state.db
datasets:
  chat: {source: chat.jsonl, format: messages}
  tools: {source: tools.jsonl, format: messages}
endpoints: {sim: {api: sim}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: tokenize, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: %q}}
  - {name: generate, uses: generate, needs: [tokenize], foreach: datasets, with: {max_tokens: 100}}
  - {name: handoff, uses: handoff, needs: [generate], with: {out: out, tokenizer: %q}}
`, tokDir, tokDir))
	enginetest.Run(t, p, store, nil)
	checks := map[string]int{}
	for _, r := range readSpeculators(t, filepath.Join(dir, "out", "current")) {
		checks[r.Metadata.PromptCheck]++
	}
	if len(checks) != 1 || checks["count"] != 210 {
		t.Errorf("prompt checks %v; want all 210 rows count (none refused, none of another length)", checks)
	}
}
