package tokenize_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/state"
)

// dateTemplate prints the date, as gpt-oss's and Llama 3.2's do, and
// takes a kwarg, as Qwen3's does.
const dateTemplate = `Today is {{ strftime_now("%d %B %Y") }}.
{% if enable_thinking is defined and not enable_thinking %}(no thinking)
{% endif %}{% for m in messages %}{{ m.role }}: {{ m.content }}
{% endfor %}`

// dateSpec tokenizes one prompt with a template that prints the date.
func dateSpec(t *testing.T, dir, with string) string {
	t.Helper()
	tokDir, _ := filepath.Abs("../../internal/tokenizer/testdata/qwen3")
	tpl := filepath.Join(dir, "date.jinja")
	if _, err := os.Stat(tpl); err != nil {
		os.WriteFile(tpl, []byte(dateTemplate), 0o644)
		os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(`{"messages": [{"role": "user", "content": "What day is it?"}]}`+"\n"), 0o644)
	}
	return `version: 1
name: tok
state: state.db
datasets: {d: {source: d.jsonl}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: tokenize, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: "` + tokDir + `", chat_template: "` + tpl + `"` + with + `}}
  - {name: merge, uses: merge, needs: [tokenize], with: {out: out.jsonl, format: record}}
`
}

func runOn(t *testing.T, p *engine.Pipeline, store *state.Store, day time.Time) map[string]string {
	t.Helper()
	results, err := p.Run(context.Background(), store, engine.RunOptions{Log: &bytes.Buffer{}, Now: func() time.Time { return day }})
	if err != nil {
		t.Fatal(err)
	}
	actions := map[string]string{}
	for _, r := range results {
		if r.Err != nil {
			t.Fatalf("%s: %v", r.Node.ID, r.Err)
		}
		actions[r.Node.ID] = r.Outcome.String()
	}
	return actions
}

func promptIDs(t *testing.T, dir string) []int {
	t.Helper()
	out, err := os.ReadFile(filepath.Join(dir, "out.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var rec conv.Record
	if err := json.Unmarshal(bytes.TrimSpace(out), &rec); err != nil {
		t.Fatal(err)
	}
	return rec.PromptIDs
}

// TestTokenize_DatePinsRenders: with date: the ids are the same whatever
// day the run happens on, and changing date: or chat_template_kwargs
// reruns tokenize and what follows.
func TestTokenize_DatePinsRenders(t *testing.T) {
	dir := t.TempDir()
	monday := time.Date(2026, 3, 16, 23, 59, 0, 0, time.UTC)
	tuesday := monday.Add(24 * time.Hour)
	p, store := enginetest.Open(t, dir, dateSpec(t, dir, `, date: "2026-03-14"`))
	runOn(t, p, store, monday)
	first := promptIDs(t, dir)
	if got := runOn(t, p, store, tuesday); got["tokenize[d]"] != "up to date" {
		t.Errorf("a day later tokenize %q; want up to date", got["tokenize[d]"])
	}

	// A fresh store on another day renders the same ids.
	other := t.TempDir()
	p2, store2 := enginetest.Open(t, other, dateSpec(t, other, `, date: "2026-03-14"`))
	runOn(t, p2, store2, tuesday)
	if second := promptIDs(t, other); !slices.Equal(first, second) {
		t.Errorf("ids on another day differ:\n%v\n%v", first, second)
	}

	// Another date reruns tokenize and merge, and plan says why.
	p, store = enginetest.Open(t, dir, dateSpec(t, dir, `, date: "2026-03-15"`))
	why := ""
	for _, s := range p.Plan(store, engine.Selection{}) {
		if s.Node.ID == "tokenize[d]" {
			why = s.Words()
		}
	}
	if want := `will rerun: date "2026-03-14" -> "2026-03-15"`; why != want {
		t.Errorf("plan says %q; want %q", why, want)
	}
	got := runOn(t, p, store, monday)
	if got["tokenize[d]"] != "ran" || got["merge"] != "ran" {
		t.Errorf("after a date change: %v; want tokenize and merge to run", got)
	}
	if slices.Equal(promptIDs(t, dir), first) {
		t.Error("another date rendered the same ids")
	}

	// So do template kwargs.
	p, store = enginetest.Open(t, dir, dateSpec(t, dir, `, date: "2026-03-15", chat_template_kwargs: {enable_thinking: false}`))
	if got := runOn(t, p, store, monday); got["tokenize[d]"] != "ran" || got["merge"] != "ran" {
		t.Errorf("after a kwargs change: %v; want tokenize and merge to run", got)
	}
}

func TestTokenize_DateNeeded(t *testing.T) {
	dir := t.TempDir()
	p, store := enginetest.Open(t, dir, dateSpec(t, dir, ""))
	results, err := p.Run(context.Background(), store, engine.RunOptions{Log: &bytes.Buffer{},
		Now: func() time.Time { return time.Date(2026, 3, 16, 9, 0, 0, 0, time.UTC) }})
	msg := ""
	if err != nil {
		msg = err.Error()
	}
	for _, r := range results {
		if r.Err != nil {
			msg += r.Err.Error()
		}
	}
	if !strings.Contains(msg, "prints today's date (strftime_now): set `date: 2026-03-16`") {
		t.Errorf("run without date: %q; want an error asking for date:", msg)
	}
}

func TestTokenize_CheckOptions(t *testing.T) {
	for _, tt := range []struct{ with, msg string }{
		{`, date: "14/03/2026"`, `date "14/03/2026": want YYYY-MM-DD`},
		{`, date: "2026-03-14", chat_template_kwargs: {messages: []}`, `template kwarg "messages": the template gets messages from the conversation`},
	} {
		dir := t.TempDir()
		path := filepath.Join(dir, "spec.yaml")
		os.WriteFile(path, []byte(dateSpec(t, dir, tt.with)), 0o644)
		if _, err := engine.Load(path, enginetest.NoEnv); err == nil || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: error %v; want one saying %q", tt.with, err, tt.msg)
		}
	}
}
