package dedupe_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
	"github.com/eaglet-dev/eaglet/state"
)

// The testdata datasets overlap: code.jsonl repeats chat.jsonl's first
// prompt with another answer, its second in other case and whitespace,
// its printing-press prompt with the last word changed (a near duplicate)
// and one whole record; chat.jsonl asks one prompt three times with three
// answers. Of 15 records, 7 distinct prompts are left once the two
// prompts bench.jsonl holds are dropped: one that runs from a system
// message into the user's, one in other case and whitespace.
const dedupeSpec = `version: 1
name: dd
state: state.db
datasets:
  chat: {source: chat.jsonl, format: messages}
  code: {source: code.jsonl, format: messages}
endpoints:
  e: {api: openai, urls: ["URL/v1"], model: sim, concurrency: 4}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: dedupe, uses: dedupe, needs: [load]WITH}
  - {name: generate, uses: generate, needs: [dedupe], foreach: datasets, with: {endpoint: e, max_tokens: 64}}
`

// setUp copies the test datasets into a new directory, with their lines
// reversed when asked, and writes the spec with the dedupe options given.
func setUp(t *testing.T, url, with string, reverse bool) string {
	t.Helper()
	dir := t.TempDir()
	for _, f := range []string{"chat.jsonl", "code.jsonl", "bench.jsonl"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		if err != nil {
			t.Fatal(err)
		}
		if reverse {
			lines := strings.Split(strings.TrimSpace(string(b)), "\n")
			slices.Reverse(lines)
			b = []byte(strings.Join(lines, "\n") + "\n")
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if with != "" {
		with = ", with: " + with
	}
	spec := strings.NewReplacer("URL", url, "WITH", with).Replace(dedupeSpec)
	if err := os.WriteFile(filepath.Join(dir, "spec.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func run(t *testing.T, dir string) (*engine.Pipeline, *state.Store, map[string]*engine.Result) {
	t.Helper()
	p, err := engine.Load(filepath.Join(dir, "spec.yaml"), enginetest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	store, err := state.Open(p.Spec.State)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return p, store, enginetest.Run(t, p, store, nil)
}

// prompts lists what an instance passed on as "dataset: first words of
// the prompt", sorted.
func prompts(t *testing.T, store *state.Store, id string) []string {
	t.Helper()
	var out []string
	err := store.EachOutput(context.Background(), []string{id}, func(row state.Row) error {
		var rec conv.Record
		if err := json.Unmarshal(row.Data, &rec); err != nil {
			return err
		}
		p := rec.Prompt()
		words := strings.Fields(p[len(p)-1].Content)
		out = append(out, rec.Dataset+": "+strings.Join(words[:min(3, len(words))], " "))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}

func TestDedupe_GeneratesEachPromptOnce(t *testing.T) {
	decontam := "{decontaminate: {benchmarks: [bench.jsonl]}}"
	tests := []struct {
		name      string
		with      string
		chat      []string
		code      []string
		requests  int
		flagged   int
		reasonsOf map[string]int
	}{
		{
			name: "spec order",
			with: decontam,
			chat: []string{"chat: Describe the history", "chat: Explain how photosynthesis", "chat: List three prime",
				"chat: Translate good morning", "chat: Write a short"},
			code:     []string{"code: Implement binary search", "code: Summarize the plot"},
			requests: 7,
			reasonsOf: map[string]int{"chat: exact duplicate of chat": 2, "code: exact duplicate of chat": 3,
				"code: near duplicate of chat": 1, "chat: contaminated (bench.jsonl)": 1, "code: contaminated (bench.jsonl)": 1},
		},
		{
			name: "priority",
			with: "{priority: [code], decontaminate: {benchmarks: [bench.jsonl]}}",
			chat: []string{"chat: List three prime"},
			code: []string{"code: Describe the history", "code: Explain how photosynthesis", "code: Implement binary search",
				"code: Summarize the plot", "code: Translate good morning", "code: WRITE a short"},
			requests: 7,
			reasonsOf: map[string]int{"chat: exact duplicate of chat": 2, "chat: exact duplicate of code": 3,
				"chat: near duplicate of code": 1, "chat: contaminated (bench.jsonl)": 1, "code: contaminated (bench.jsonl)": 1},
		},
		{
			// The straddling run of shared words is 20 long: at 21 it is
			// no contamination. The other benchmark prompt has 18 words
			// and the training prompt holds them all: a benchmark
			// prompt shorter than n is one n-gram of its own length.
			name: "longer n-grams",
			with: "{decontaminate: {benchmarks: [bench.jsonl], ngram: 21}}",
			chat: []string{"chat: Describe the history", "chat: Explain how photosynthesis", "chat: List three prime",
				"chat: Translate good morning", "chat: Write a short", "chat: she sold half"},
			code:      []string{"code: Implement binary search", "code: Summarize the plot"},
			requests:  8,
			reasonsOf: map[string]int{"code: contaminated (bench.jsonl)": 1},
		},
		{
			name: "flag",
			with: "{decontaminate: {benchmarks: [bench.jsonl], action: flag}}",
			chat: []string{"chat: Describe the history", "chat: Explain how photosynthesis", "chat: List three prime",
				"chat: Translate good morning", "chat: Write a short", "chat: she sold half"},
			code:     []string{"code: Implement binary search", "code: Summarize the plot", "code: WRITE a function"},
			requests: 9,
			flagged:  2,
		},
		{
			name: "exact only",
			with: "{near: false}",
			chat: []string{"chat: Describe the history", "chat: Explain how photosynthesis", "chat: List three prime",
				"chat: Translate good morning", "chat: Write a short", "chat: she sold half"},
			code: []string{"code: Describe the history", "code: Implement binary search", "code: Summarize the plot",
				"code: WRITE a function"},
			requests: 10,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 20})})
			var first []string
			for _, reverse := range []bool{false, true} {
				dir := setUp(t, srv.URL, tt.with, reverse)
				_, store, _ := run(t, dir)
				if n := srv.Take(); n != tt.requests {
					t.Errorf("reverse=%v: %d requests, want one per distinct prompt, %d", reverse, n, tt.requests)
				}
				chat, code := prompts(t, store, "generate[chat]"), prompts(t, store, "generate[code]")
				if !slices.Equal(chat, tt.chat) || !slices.Equal(code, tt.code) {
					t.Errorf("reverse=%v: generated\n  %q\n  %q\nwant\n  %q\n  %q", reverse, chat, code, tt.chat, tt.code)
				}
				in, err := store.GetInstance("dedupe")
				if err != nil {
					t.Fatal(err)
				}
				for reason, n := range tt.reasonsOf {
					if in.Stats.Dropped[reason] != n {
						t.Errorf("reverse=%v: %d × %q, want %d (all: %v)", reverse, in.Stats.Dropped[reason], reason, n, in.Stats.Dropped)
					}
				}
				flagged := 0
				for _, n := range in.Stats.Flagged {
					flagged += n
				}
				if flagged != tt.flagged {
					t.Errorf("reverse=%v: %d flagged, want %d", reverse, flagged, tt.flagged)
				}
				// The survivors are the same records, by key, whatever the line order.
				var keys []string
				store.EachOutput(context.Background(), []string{"dedupe"}, func(row state.Row) error {
					keys = append(keys, row.Key)
					return nil
				})
				if first == nil {
					first = keys
				} else if !slices.Equal(first, keys) {
					t.Errorf("survivors differ with the lines reversed:\n  %q\n  %q", first, keys)
				}
				// A second run sends nothing and reruns nothing.
				_, _, results := run(t, dir)
				for id, r := range results {
					if r.Outcome != engine.UpToDate {
						t.Errorf("second run: %s %s (%s)", id, r.Outcome, r.Decision)
					}
				}
				if n := srv.Take(); n != 0 {
					t.Errorf("second run sent %d requests", n)
				}
			}
		})
	}
}

// TestDedupe_Examples checks what status --json shows: each kind of drop
// beside its survivor or benchmark line, with the matched n-gram running
// across the message boundary.
func TestDedupe_Examples(t *testing.T) {
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 20})})
	dir := setUp(t, srv.URL, "{decontaminate: {benchmarks: [bench.jsonl]}}", false)
	_, store, _ := run(t, dir)
	in, err := store.GetInstance("dedupe")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]state.Example{}
	for _, ex := range in.Stats.Examples {
		got[ex.Reason+" | "+ex.Record] = ex
	}
	want := []state.Example{
		{Reason: "chat: contaminated (bench.jsonl)", Record: "chat/0a3f768f2326ea02ab20b8f5c994ea46 (chat.jsonl:7)",
			Match: "bench.jsonl:1", Text: "natalia sold clips to 48 of her friends in april and then she"},
		{Reason: "code: contaminated (bench.jsonl)", Record: "code/a09d660fb50d1e09dca83a87d6fcbb56 (code.jsonl:6)",
			Match: "bench.jsonl:2", Text: "write a function that returns the sum of the squares of all odd"},
		{Reason: "code: near duplicate of chat", Record: "code/caefcfb3ff2f8574f444af63d5e6f9a9 (code.jsonl:3)",
			Match: "chat/cccc67c123ab4f661a173ff662f6e430"},
	}
	for _, w := range want {
		g, ok := got[w.Reason+" | "+w.Record]
		if !ok {
			t.Errorf("no example %q; have %+v", w.Reason+" | "+w.Record, in.Stats.Examples)
			continue
		}
		if w.Similarity = g.Similarity; g.Reason == "code: near duplicate of chat" && (g.Similarity < 0.8 || g.Similarity > 1) {
			t.Errorf("near duplicate's similarity %v, want 0.8 to 1", g.Similarity)
		}
		if g != w {
			t.Errorf("example\n  %+v\nwant\n  %+v", g, w)
		}
	}
}

// TestDedupe_BenchmarkEditReruns checks that the benchmark files are part
// of the stage's fingerprint: a prompt added to one drops its record on
// the next run, which asks the server nothing new.
func TestDedupe_BenchmarkEditReruns(t *testing.T) {
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 20})})
	dir := setUp(t, srv.URL, "{decontaminate: {benchmarks: [bench.jsonl]}}", false)
	run(t, dir)
	srv.Take()
	f, err := os.OpenFile(filepath.Join(dir, "bench.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString(`{"question": "Summarize the plot of Moby Dick in three sentences for a ten year old reader."}` + "\n")
	f.Close()
	_, store, results := run(t, dir)
	if r := results["dedupe"]; r.Outcome != engine.Ran {
		t.Errorf("dedupe after a benchmark edit: %s (%s), want ran", r.Outcome, r.Decision)
	}
	if n := srv.Take(); n != 0 {
		t.Errorf("%d requests after a benchmark edit, want 0", n)
	}
	if got, want := prompts(t, store, "generate[code]"), []string{"code: Implement binary search"}; !slices.Equal(got, want) {
		t.Errorf("generate[code] after a benchmark edit: %q, want %q", got, want)
	}
}

// TestDedupe_BadOptions checks that every bad option is reported at once,
// each at its file:line:col with what to do.
func TestDedupe_BadOptions(t *testing.T) {
	const base = `version: 1
name: v
datasets:
  chat: {source: chat.jsonl}
  code: {source: code.jsonl}
stages:
  - {name: load, uses: load, foreach: datasets}
  - name: dedupe
    uses: dedupe
    needs: [load]
    with:
`
	tests := []struct {
		name string
		with string
		want []string
	}{
		{
			name: "ranges",
			with: "      threshold: 1.5\n      shingle: -1\n      num_perm: 4\n",
			want: []string{
				"spec.yaml:12:18: stage dedupe: threshold is 1.5; use a Jaccard similarity above 0, at most 1",
				"spec.yaml:13:16: stage dedupe: shingle is -1; use a number of words, 1 or more",
				"spec.yaml:14:17: stage dedupe: num_perm is 4; use 16 to 1024",
			},
		},
		{
			name: "priority",
			with: "      priority: [code, chta, code]\n",
			want: []string{
				`spec.yaml:12:24: stage dedupe: priority names dataset "chta", which the spec does not have (did you mean "chat"?); datasets: chat, code`,
				"spec.yaml:12:30: stage dedupe: priority names dataset code twice; remove one",
			},
		},
		{
			name: "decontaminate",
			with: "      decontaminate:\n        benchmarks:\n          - bench.jsonl\n          - gsm8k.jsonl\n        ngram: -3\n        action: remove\n        min_words: -1\n",
			want: []string{
				"spec.yaml:15:13: stage dedupe: benchmark gsm8k.jsonl: no such file; give a file relative to the spec",
				"spec.yaml:16:16: stage dedupe: ngram is -3; use a number of words, 1 or more",
				`spec.yaml:17:17: stage dedupe: decontaminate action is "remove"; use drop or flag`,
				"spec.yaml:18:20: stage dedupe: min_words is -1; use a number of words, 0 (every benchmark prompt) or more",
			},
		},
		{
			name: "no benchmarks",
			with: "      decontaminate: {action: flag}\n",
			want: []string{"spec.yaml:12:22: stage dedupe: decontaminate needs `benchmarks:`"},
		},
		{
			name: "unknown key",
			with: "      treshold: 0.7\n",
			want: []string{`spec.yaml:12:7: unknown key "treshold" (did you mean "threshold"?)`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			for _, f := range []string{"chat.jsonl", "code.jsonl", "bench.jsonl"} {
				if err := os.WriteFile(filepath.Join(dir, f), []byte(`{"prompt": "hi"}`+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			path := filepath.Join(dir, "spec.yaml")
			if err := os.WriteFile(path, []byte(base+tt.with), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := engine.Load(path, enginetest.NoEnv)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
}

// TestDedupe_PlanCountsPerDataset checks that plan, before anything has
// run, sends no request and says how many prompts each dataset's generate
// instance will send once dedupe has dropped the copies.
func TestDedupe_PlanCountsPerDataset(t *testing.T) {
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 20})})
	dir := setUp(t, srv.URL, "{decontaminate: {benchmarks: [bench.jsonl]}}", false)
	p, err := engine.Load(filepath.Join(dir, "spec.yaml"), enginetest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"load[chat]": 8, "load[code]": 7, "dedupe": 7, "generate[chat]": 5, "generate[code]": 2}
	for _, s := range p.Plan(nil, engine.Selection{}) {
		got := s.Estimate.Records
		if s.Node.Stage.Spec.Name == "generate" {
			got = s.Todo
		}
		if s.Err != nil || got != want[s.Node.ID] {
			t.Errorf("plan %s: %d records (%s, %v), want %d", s.Node.ID, got, s.Words(), s.Err, want[s.Node.ID])
		}
	}
	if n := srv.Take(); n != 0 {
		t.Errorf("plan sent %d requests", n)
	}
}

// TestDedupe_NamesTheBenchmarkPromptsThatTook: status says which
// benchmark prompt took how many records, so a short prompt matched whole
// is seen, not hidden in a total; the counts add up to the drops.
func TestDedupe_NamesTheBenchmarkPromptsThatTook(t *testing.T) {
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 20})})
	dir := setUp(t, srv.URL, "{decontaminate: {benchmarks: [bench.jsonl]}}", false)
	p, err := engine.Load(filepath.Join(dir, "spec.yaml"), enginetest.NoEnv)
	if err != nil {
		t.Fatal(err)
	}
	var planned []string
	for _, s := range p.Plan(nil, engine.Selection{}) {
		if s.Node.ID == "dedupe" {
			planned = s.Figures
		}
	}
	_, store, _ := run(t, dir)
	in, err := store.GetInstance("dedupe")
	if err != nil {
		t.Fatal(err)
	}
	dropped := 0
	for reason, n := range in.Stats.Dropped {
		if strings.Contains(reason, "contaminated") {
			dropped += n
		}
	}
	lines := in.Stats.Figures
	if dropped == 0 || len(lines) < 2 || !strings.Contains(lines[0], "matched a record") {
		t.Fatalf("%d dropped as contaminated; figures %q", dropped, lines)
	}
	took := 0
	for _, l := range lines[1:] {
		var where string
		var n int
		if _, err := fmt.Sscanf(strings.TrimSpace(l), "%s took %d", &where, &n); err != nil || !strings.HasPrefix(where, "bench.jsonl:") {
			t.Fatalf("line %q: %v", l, err)
		}
		took += n
	}
	if took != dropped {
		t.Errorf("the benchmark prompts took %d records, the drops say %d:\n%s", took, dropped, strings.Join(lines, "\n"))
	}
	if !slices.Equal(planned, lines) {
		t.Errorf("plan said\n%q\nthe run\n%q", planned, lines)
	}
}

// TestDedupe_ShortBenchmarkPromptWarnsAndMinWords: a benchmark prompt
// shorter than ngram is matched whole; when it takes an outsized share of
// the records the figures warn and say which min_words leaves it out, and
// setting it reruns dedupe, which keeps those records and says what it
// left out.
func TestDedupe_ShortBenchmarkPromptWarnsAndMinWords(t *testing.T) {
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 20})})
	dir := setUp(t, srv.URL, "{near: false, decontaminate: {benchmarks: [bench.jsonl]}}", false)
	f, err := os.OpenFile(filepath.Join(dir, "chat.jsonl"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		fmt.Fprintf(f, `{"messages": [{"role": "user", "content": "Round %d of the geography quiz: what is the capital of France? Then say why."}]}`+"\n", i)
	}
	f.Close()
	contaminated := func(store *state.Store) (int, []string) {
		in, err := store.GetInstance("dedupe")
		if err != nil || in == nil {
			t.Fatalf("dedupe: %v, %v", in, err)
		}
		n := 0
		for reason, k := range in.Stats.Dropped {
			if strings.Contains(reason, "contaminated") {
				n += k
			}
		}
		return n, in.Stats.Figures
	}
	_, store, _ := run(t, dir)
	n, lines := contaminated(store)
	warn := "warning: bench.jsonl:3 has 6 words, fewer than ngram (13), so it is matched whole, and it took 10 of 25 records (40%); " +
		"if those are not copies of it, set decontaminate.min_words to 7 or more"
	if n != 12 || !slices.Contains(lines, warn) {
		t.Fatalf("%d dropped as contaminated, want 12 (10 of them the quiz's); figures:\n%s\nwant the line\n%s", n, strings.Join(lines, "\n"), warn)
	}
	store.Close()

	spec := filepath.Join(dir, "spec.yaml")
	b, err := os.ReadFile(spec)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, bytes.Replace(b, []byte("[bench.jsonl]}"), []byte("[bench.jsonl], min_words: 7}"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	_, store, results := run(t, dir)
	if r := results["dedupe"]; r.Outcome != engine.Ran {
		t.Errorf("dedupe after min_words was set: %s (%s), want ran", r.Outcome, r.Decision)
	}
	n, lines = contaminated(store)
	left := "1 benchmark prompt of 3 had fewer than min_words (7) words and matched nothing"
	if n != 2 || len(lines) == 0 || lines[0] != left {
		t.Errorf("with min_words 7: %d dropped as contaminated, want 2; figures:\n%s\nwant first\n%s", n, strings.Join(lines, "\n"), left)
	}
	for _, l := range lines {
		if strings.HasPrefix(l, "warning:") {
			t.Errorf("with min_words 7 the figures still warn: %s", l)
		}
	}
}
