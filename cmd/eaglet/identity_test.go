package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
	"github.com/eaglet-dev/eaglet/state"
)

// identitySpec is a researcher's spec: datasets, an OpenAI-compatible
// endpoint, generate, filter and merge, with the sampling temperature and
// the datasets block as the parts edited between runs.
func identitySpec(url, datasets, temperature string) string {
	return `version: 1
name: identity
state: runs/state.db
datasets:
` + datasets + `
endpoints:
  target:
    api: openai
    urls: ["` + url + `/v1"]
    model: sim
    concurrency: 8
stages:
  - {name: load, uses: load, foreach: datasets}
  - name: generate
    uses: generate
    needs: [load]
    foreach: datasets
    with: {endpoint: target, max_tokens: 256, retries: 0, timeout: 1s, temperature: ` + temperature + `}
  - {name: filter, uses: filter, needs: [generate], foreach: datasets, with: {keep: "completion_tokens > 0"}}
  - {name: merge, uses: merge, needs: [filter], with: {out: runs/train.jsonl, shuffle_seed: 7}}
`
}

// chatPrompts writes the first n prompts of the bundled chat set to each
// of dir/data/names and returns them, one line each.
func chatPrompts(t *testing.T, dir string, n int, names ...string) []string {
	t.Helper()
	src, err := os.ReadFile("../../specs/examples/data/chat.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(strings.TrimSpace(string(src)), "\n")[:n]
	lines[n-1] = strings.TrimSuffix(lines[n-1], "\n") + "\n"
	for _, name := range names {
		writeLines(t, filepath.Join(dir, "data", name), lines)
	}
	return lines
}

// writeLines writes lines to path, making its directory.
func writeLines(t *testing.T, path string, lines []string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestIdentity_NeverPayTwice edits a spec the way researchers do between
// runs and counts the requests the server receives: only a change in what
// the target is asked costs requests; an option set back costs none.
func TestIdentity_NeverPayTwice(t *testing.T) {
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 60})})
	dir := t.TempDir()
	lines := chatPrompts(t, dir, 30, "chat.jsonl")
	writeData := func(name string, lines []string) { writeLines(t, filepath.Join(dir, "data", name), lines) }
	spec := filepath.Join(dir, "spec.yaml")
	one := "  chat: {source: data/chat.jsonl, format: messages}"
	edit := func(datasets, temperature string) {
		if err := os.WriteFile(spec, []byte(identitySpec(srv.URL, datasets, temperature)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		code, out, errOut := eaglet(append([]string{"run", "--progress", "lines"}, args...)...)
		if code != 0 {
			t.Fatalf("run %v: exit %d\n%s%s", args, code, out, errOut)
		}
		return out + errOut
	}
	trainLines := func() int {
		f, err := os.Open(filepath.Join(dir, "runs", "train.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		n := 0
		for sc := bufio.NewScanner(f); sc.Scan(); {
			n++
		}
		return n
	}

	edit(one, "0.7")
	run(spec)
	if got := srv.Take(); got != 30 {
		t.Fatalf("first run sent %d requests; want 30", got)
	}
	steps := []struct {
		name     string
		change   func()
		args     func() []string
		requests int
		output   string
	}{
		{"run again", func() {}, nil, 0, "everything is up to date"},
		{"run from another working directory", func() { t.Chdir(filepath.Join(dir, "data")) },
			func() []string { return []string{"../spec.yaml"} }, 0, ""},
		{"rename the source", func() {
			os.Rename(filepath.Join(dir, "data", "chat.jsonl"), filepath.Join(dir, "data", "renamed.jsonl"))
			edit("  chat: {source: data/renamed.jsonl, format: messages}", "0.7")
			// Plan says no record of it needs a request.
			want := "30 of 30 records to do, none needs a request [30 earlier answers reused]"
			if _, out, _ := eaglet("plan", spec); !strings.Contains(out, want) {
				t.Fatalf("plan lacks %q:\n%s", want, out)
			}
		}, nil, 0, "30 done (30 reused)"},
		{"reorder its lines", func() {
			rev := make([]string, len(lines))
			for i, l := range lines {
				rev[len(lines)-1-i] = l
			}
			writeData("renamed.jsonl", rev)
		}, nil, 0, ""},
		{"rename the dataset", func() { edit("  talk: {source: data/renamed.jsonl, format: messages}", "0.7") }, nil, 0, ""},
		{"add a copy of the dataset", func() {
			writeData("copy.jsonl", lines)
			edit("  talk: {source: data/renamed.jsonl, format: messages}\n  copy: {source: data/copy.jsonl, format: messages}", "0.7")
		}, nil, 0, ""},
		{"change the temperature", func() { edit("  talk: {source: data/renamed.jsonl, format: messages}", "0.9") }, nil, 30, ""},
		{"set it back", func() { edit("  talk: {source: data/renamed.jsonl, format: messages}", "0.7") }, nil, 0, "30 done (30 reused)"},
		{"and forth again", func() { edit("  talk: {source: data/renamed.jsonl, format: messages}", "0.9") }, nil, 0, ""},
		{"one new prompt", func() {
			writeData("renamed.jsonl", append(append([]string{}, lines...), `{"messages": [{"role": "user", "content": "A prompt never asked before."}]}`+"\n"))
		}, nil, 1, ""},
	}
	for _, s := range steps {
		s.change()
		args := []string{spec}
		if s.args != nil {
			args = s.args()
		}
		out := run(args...)
		if got := srv.Take(); got != s.requests {
			t.Fatalf("%s: the server received %d requests; want %d\n%s", s.name, got, s.requests, out)
		}
		if !strings.Contains(out, s.output) {
			t.Fatalf("%s: output lacks %q:\n%s", s.name, s.output, out)
		}
		// Reused answers cost nothing: the summary's cost line counts
		// only the tokens of answers a server was asked for.
		if s.requests == 0 && strings.Contains(out, "this run: ") {
			t.Errorf("%s: no request sent, yet the summary charges tokens:\n%s", s.name, out)
		}
	}
	if got := trainLines(); got != 31 {
		t.Errorf("train.jsonl has %d lines; want 31", got)
	}
}

// TestIdentity_FailedRunKeepsGoodFile: with the server down, an edit that
// regenerates everything fails every record; the training file written by
// the last good run stays as it was, and --allow-partial writes what there is.
// It waits out request timeouts beside the package's other tests.
func TestIdentity_FailedRunKeepsGoodFile(t *testing.T) {
	t.Parallel()
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 60})})
	dir := t.TempDir()
	chatPrompts(t, dir, 20, "chat.jsonl")
	spec := filepath.Join(dir, "spec.yaml")
	ds := "  chat: {source: data/chat.jsonl, format: messages}"
	os.WriteFile(spec, []byte(identitySpec(srv.URL, ds, "0.7")), 0o644)
	if code, out, errOut := eaglet("run", spec); code != 0 {
		t.Fatalf("first run: exit %d\n%s%s", code, out, errOut)
	}
	train := filepath.Join(dir, "runs", "train.jsonl")
	good, err := os.ReadFile(train)
	if err != nil || len(good) == 0 {
		t.Fatalf("no training file after the first run: %v", err)
	}

	srv.Down.Store(true)
	os.WriteFile(spec, []byte(identitySpec(srv.URL, ds, "0.9")), 0o644)
	code, out, errOut := eaglet("run", "--progress", "lines", spec)
	if code != exitFailure {
		t.Fatalf("run with the server down: exit %d; want %d\n%s%s", code, exitFailure, out, errOut)
	}
	if !strings.Contains(errOut, "merge: not written: generate[chat] has 20 failed records") {
		t.Errorf("the log does not say why merge did not write:\n%s", errOut)
	}
	if now, _ := os.ReadFile(train); string(now) != string(good) {
		t.Fatalf("train.jsonl changed after a failed run: %d bytes, was %d", len(now), len(good))
	}
	// Asked for explicitly, the partial output is written.
	if code, _, _ := eaglet("run", "--allow-partial", spec); code != exitFailure {
		t.Fatalf("run --allow-partial with the server down: exit %d; want %d", code, exitFailure)
	}
	if now, _ := os.ReadFile(train); len(now) != 0 {
		t.Errorf("run --allow-partial left %d bytes; want the empty partial output", len(now))
	}
}

// TestRun_SummaryCountsRequestsAndRetries: the end-of-run summary and
// status say how many requests were sent and which failures were retried,
// and agree with what the server received. It waits out retries and the
// endpoint's rest beside the package's other tests.
func TestRun_SummaryCountsRequestsAndRetries(t *testing.T) {
	t.Parallel()
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 60}),
		Faults: server.Faults{Seed: 5, Error500: 0.2, RateLimit: 0.1, RetryAfter: 10 * time.Millisecond}})
	dir := t.TempDir()
	chatPrompts(t, dir, 40, "chat.jsonl")
	spec := filepath.Join(dir, "spec.yaml")
	// A timeout over the endpoint's 2 s rest: three 500s in a row (the
	// faults are 30% of requests, their order the scheduler's) take the
	// only URL out for 2 s, which a record must wait out, not fail on.
	body := strings.Replace(identitySpec(srv.URL, "  chat: {source: data/chat.jsonl, format: messages}", "0.7"), "retries: 0, timeout: 1s", "retries: 8, timeout: 10s", 1)
	body = strings.Replace(body, "    concurrency: 8\n", "    concurrency: 8\n    price: {input: 1.0, output: 2.0}\n", 1)
	os.WriteFile(spec, []byte(body), 0o644)
	code, _, errOut := eaglet("run", "--progress", "lines", spec)
	if code != 0 {
		t.Fatalf("run: exit %d\n%s", code, errOut)
	}
	sent := srv.Take()
	if sent <= 40 {
		t.Fatalf("the server received %d requests for 40 records with 30%% faults; want retries", sent)
	}
	if want := fmt.Sprintf("requests: %d sent, %d of them retries (", sent, sent-40); !strings.Contains(errOut, want) {
		t.Errorf("summary lacks %q:\n%s", want, errOut)
	}
	for _, kind := range []string{"http 500 ×", "http 429 ×", "nothing left to do", "this run: "} {
		if !strings.Contains(errOut, kind) {
			t.Errorf("summary lacks %q:\n%s", kind, errOut)
		}
	}
	instances, _ := statusOf(t, spec)
	for _, in := range instances {
		if in.Instance != "generate[chat]" {
			continue
		}
		// Priced at the endpoint's price, which status finds without
		// knowing the kind.
		if want := (float64(in.PromptTokens) + 2*float64(in.CompletionTokens)) / 1e6; in.Dollars < want*0.999 || in.Dollars > want*1.001 || want == 0 {
			t.Errorf("status prices generate[chat] at $%f; want $%f", in.Dollars, want)
		}
		if want := fmt.Sprintf(", $%.2f", in.Dollars); !strings.Contains(errOut, want) {
			t.Errorf("summary lacks this run's cost %q:\n%s", want, errOut)
		}
		// Tokens are counted where they are made, not again by the filter.
		if want := fmt.Sprintf("this run: %s prompt and %s completion tokens", count(in.PromptTokens), count(in.CompletionTokens)); !strings.Contains(errOut, want) {
			t.Errorf("summary lacks %q:\n%s", want, errOut)
		}
		if in.Requests != sent || sumValues(in.Retries) != sent-40 {
			t.Errorf("status: %d requests, retries %v; want %d and %d retries", in.Requests, in.Retries, sent, sent-40)
		}
	}
}

// TestGC_DeletesOnlyWhatGoingBackNeeds: gc lists, then deletes, answers
// kept for going back; the current output stays, and going back then costs
// requests again.
func TestGC_DeletesOnlyWhatGoingBackNeeds(t *testing.T) {
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 60})})
	dir := t.TempDir()
	chatPrompts(t, dir, 30, "chat.jsonl")
	spec := filepath.Join(dir, "spec.yaml")
	at := func(temp, datasets string) {
		os.WriteFile(spec, []byte(identitySpec(srv.URL, datasets, temp)), 0o644)
		if code, out, errOut := eaglet("run", spec); code != 0 {
			t.Fatalf("run at %s: exit %d\n%s%s", temp, code, out, errOut)
		}
	}
	chat := "  chat: {source: data/chat.jsonl, format: messages}"
	at("0.7", chat)
	at("0.9", chat)
	at("0.9", "  talk: {source: data/chat.jsonl, format: messages}")
	srv.Take()
	code, out, _ := eaglet("gc", spec)
	for _, want := range []string{"would delete 30 answers superseded", "of instances the spec no longer has", "filter[chat], generate[chat], load[chat]"} {
		if code != exitFailure || !strings.Contains(out, want) {
			t.Fatalf("gc without --yes: exit %d, want %d with %q:\n%s", code, exitFailure, want, out)
		}
	}
	if code, out, errOut := eaglet("gc", "--yes", spec); code != 0 || !strings.Contains(out, "deleted 30 answers superseded") {
		t.Fatalf("gc --yes: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := eaglet("run", spec); code != 0 || !strings.Contains(errOut, "everything is up to date") || srv.Take() != 0 {
		t.Fatalf("after gc the current output should be up to date: exit %d\n%s", code, errOut)
	}
	if _, err := os.Stat(filepath.Join(dir, "runs", "train.jsonl")); err != nil {
		t.Fatal(err)
	}
	at("0.7", "  talk: {source: data/chat.jsonl, format: messages}")
	if got := srv.Take(); got != 30 {
		t.Errorf("going back after gc sent %d requests; want 30 (the old answers are gone)", got)
	}
}

// TestIdentity_SharedPromptsAskedOnce: two datasets holding the same
// prompts, generated side by side from scratch, send one request a prompt.
func TestIdentity_SharedPromptsAskedOnce(t *testing.T) {
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 60}), Speed: 2000})
	dir := t.TempDir()
	chatPrompts(t, dir, 30, "a.jsonl", "b.jsonl")
	spec := filepath.Join(dir, "spec.yaml")
	os.WriteFile(spec, []byte(identitySpec(srv.URL, "  a: {source: data/a.jsonl, format: messages}\n  b: {source: data/b.jsonl, format: messages}", "0.7")), 0o644)
	code, out, errOut := eaglet("plan", spec)
	if code != 0 || !strings.Contains(out, "[30 prompts asked by another dataset too, sent once]") {
		t.Fatalf("plan: exit %d\n%s%s", code, out, errOut)
	}
	if code, _, errOut := eaglet("run", "--progress", "lines", spec); code != 0 || !strings.Contains(errOut, "30 sent; 30 earlier answers reused") {
		t.Fatalf("run: exit %d; want 30 requests and 30 answers shared:\n%s", code, errOut)
	}
	if got := srv.Take(); got != 30 {
		t.Errorf("the server received %d requests for 30 distinct prompts in two datasets; want 30", got)
	}
}

// TestIdentity_CopiedProject: a project directory copied elsewhere (spec,
// data and runs/ with its store) is up to date there and sends nothing;
// its outputs are the copy's own files, so one deleted in the copy is
// written again there, while the original's stays as it was. So too with
// a store of an earlier binary, which kept outputs' absolute paths.
func TestIdentity_CopiedProject(t *testing.T) {
	for _, tt := range []struct {
		name     string
		absolute bool
	}{{"this binary's store", false}, {"a store keeping absolute paths", true}} {
		t.Run(tt.name, func(t *testing.T) { copiedProject(t, tt.absolute) })
	}
}

func copiedProject(t *testing.T, absolute bool) {
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 60})})
	orig := filepath.Join(t.TempDir(), "orig")
	chatPrompts(t, orig, 20, "chat.jsonl")
	spec := identitySpec(srv.URL, "  chat: {source: data/chat.jsonl, format: messages}", "0.7")
	if err := os.WriteFile(filepath.Join(orig, "spec.yaml"), []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := eaglet("run", filepath.Join(orig, "spec.yaml")); code != 0 {
		t.Fatalf("first run: exit %d\n%s%s", code, out, errOut)
	}
	srv.Take()
	origTrain := filepath.Join(orig, "runs", "train.jsonl")
	if absolute {
		store, err := state.Open(filepath.Join(orig, "runs", "state.db"))
		if err != nil {
			t.Fatal(err)
		}
		in, err := store.GetInstance("merge")
		if err != nil || in.Stats.Output != filepath.Join("runs", "train.jsonl") {
			t.Fatalf("merge's stored output is %q (%v); want it relative to the spec", in.Stats.Output, err)
		}
		in.Stats.Output = origTrain
		if err := store.PutInstance(in); err != nil {
			t.Fatal(err)
		}
		store.Close()
	}
	want := mustReadFile(t, origTrain)
	origInfo, err := os.Stat(origTrain)
	if err != nil {
		t.Fatal(err)
	}

	copied := filepath.Join(t.TempDir(), "copy")
	if err := os.CopyFS(copied, os.DirFS(orig)); err != nil {
		t.Fatal(err)
	}
	copySpec, copyTrain := filepath.Join(copied, "spec.yaml"), filepath.Join(copied, "runs", "train.jsonl")
	if err := os.Remove(copyTrain); err != nil {
		t.Fatal(err)
	}
	_, planOut, _ := eaglet("plan", copySpec)
	if !regexp.MustCompile(`merge .*will rerun: .*train.jsonl is missing`).MatchString(planOut) {
		t.Errorf("plan in the copy does not say train.jsonl is missing:\n%s", planOut)
	}
	code, out, errOut := eaglet("run", copySpec)
	if code != 0 {
		t.Fatalf("run in the copy: exit %d\n%s%s", code, out, errOut)
	}
	if n := srv.Take(); n != 0 {
		t.Errorf("the copied project sent %d requests; want none", n)
	}
	if got := mustReadFile(t, copyTrain); string(got) != string(want) {
		t.Errorf("the copy's train.jsonl differs from the original's (%d vs %d bytes)", len(got), len(want))
	}
	if !strings.Contains(out+errOut, "wrote "+copyTrain) {
		t.Errorf("the copy's status does not name the copy's file %s:\n%s%s", copyTrain, out, errOut)
	}
	if info, err := os.Stat(origTrain); err != nil || !info.ModTime().Equal(origInfo.ModTime()) {
		t.Errorf("the original's train.jsonl was touched by the copy's run: %v", err)
	}
	// Up to date from then on, in the copy as in the original.
	for _, s := range []string{copySpec, filepath.Join(orig, "spec.yaml")} {
		if _, out, errOut := eaglet("run", s); !strings.Contains(out+errOut, "everything is up to date") {
			t.Errorf("run %s after the copy's run is not up to date:\n%s%s", s, out, errOut)
		}
	}
}

// TestPlan_FileOverFailingRecords: with a server failing records, plan
// does not promise that merge "will rerun: input changed" when the run
// then finds failed records and does not write it; it says the rerun
// waits for its input and what failed records would keep it unwritten.
func TestPlan_FileOverFailingRecords(t *testing.T) {
	t.Parallel()
	srv := simtest.ServeCounting(t, server.Config{Model: sim.New(sim.Config{Seed: 1, MeanTokens: 60}),
		Faults: server.Faults{Seed: 5, Error500: 0.3}})
	dir := t.TempDir()
	chatPrompts(t, dir, 30, "chat.jsonl")
	spec := filepath.Join(dir, "spec.yaml")
	os.WriteFile(spec, []byte(identitySpec(srv.URL, "  chat: {source: data/chat.jsonl, format: messages}", "0.7")), 0o644)
	if _, _, errOut := eaglet("run", "--allow-partial", spec); !strings.Contains(errOut, "generate[chat]: ") || !strings.Contains(errOut, "failed") {
		t.Fatalf("the first run had no failed records to test with:\n%s", errOut)
	}
	os.WriteFile(spec, []byte(identitySpec(srv.URL, "  chat: {source: data/chat.jsonl, format: messages}", "0.8")), 0o644)
	_, out, _ := eaglet("plan", spec)
	var merge string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "merge ") {
			merge = l
		}
	}
	if !strings.Contains(merge, "will run if its input changes") || !strings.Contains(merge, "not written if records upstream fail again, as ") {
		t.Errorf("plan says of merge:\n%s\nwant that it waits for its input, and may not be written", merge)
	}
}
