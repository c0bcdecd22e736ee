package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/report"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
	"github.com/eaglet-dev/eaglet/state"
)

// chromium finds a Chromium or Chrome binary: $EAGLET_CHROMIUM, else the
// usual names on $PATH. Without one the browser tests skip, unless
// EAGLET_BROWSER=require (as .ci/run sets) makes that a failure.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("EAGLET_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no Chromium found (looked for $EAGLET_CHROMIUM, chromium, chromium-browser, google-chrome on $PATH); install it (Debian: apt-get install chromium) to run the browser tests"
	if os.Getenv("EAGLET_BROWSER") == "require" {
		t.Fatal(msg + "; EAGLET_BROWSER=require makes its absence a failure")
	}
	t.Skip(msg)
	return ""
}

// artifacts is where the browser tests leave their screenshots:
// $EAGLET_ARTIFACTS, else a directory under the system's temp dir that the
// test keeps and logs.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("EAGLET_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "eaglet-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// headless starts a headless Chromium for the test, with a fresh profile
// and nothing that reaches the network on its own, and collects every
// console error, uncaught exception and browser log error of its page.
func headless(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	bin := chromium(t)
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(bin), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1280, 900))
	alloc, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelCtx := chromedp.NewContext(alloc)
	ctx, cancelTime := context.WithTimeout(ctx, 60*time.Second)
	t.Cleanup(func() { cancelTime(); cancelCtx(); cancelAlloc() })
	var mu sync.Mutex
	var errs []string
	if err := chromedp.Listen(ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				errs = append(errs, "console.error: "+strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			errs = append(errs, fmt.Sprintf("exception: %s %s", ev.ExceptionDetails.Text, exceptionText(ev.ExceptionDetails)))
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				errs = append(errs, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
			}
		}
	}); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), errs...)
	}
}

// browserSpec writes a spec of two datasets answered over HTTP by two sim
// servers (so throughput is drawn per URL), streaming, decoding at speed
// tokens per second a sequence, filtered on the finish reason, with a
// budget of 1,000 completion tokens a record (more than max_tokens, so it
// skips nothing, but is drawn). With
// faulty, one server answers 15% of requests with a 500 and generate does
// not retry, so some records fail.
func browserSpec(t *testing.T, speed float64, faulty bool) string {
	t.Helper()
	model := sim.New(sim.Config{Seed: 7, MeanTokens: 200})
	a := simtest.Serve(t, server.Config{Model: model, Speed: speed})
	var faults server.Faults
	retries := 5
	if faulty {
		faults, retries = server.Faults{Seed: 3, Error500: 0.15}, 0
	}
	b := simtest.Serve(t, server.Config{Model: model, Speed: speed, Faults: faults})
	data, _ := filepath.Abs("../../specs/examples/data")
	spec := fmt.Sprintf(`version: 1
name: browser
state: run/state.db
datasets:
  chat: {source: %[1]s/chat.jsonl, format: messages, est_completion_tokens: 250}
  code: {source: %[1]s/code.jsonl, format: sharegpt, est_completion_tokens: 250}
endpoints:
  target:
    api: openai
    urls: ["%[2]s/v1", "%[3]s/v1"]
    model: sim
    concurrency: 24
    price: {input: 0.6, output: 2.5}
    options: {stream: true}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: 60, seed: 1}}
  - {name: generate, uses: generate, needs: [cap], foreach: datasets, with: {max_tokens: 512, temperature: 0.7, retries: %[4]d,
      budget: {completion_tokens: "input.records * 1000"}}}
  - {name: filter, uses: filter, needs: [generate], foreach: datasets, with: {keep: "finish_reason == 'stop'"}}
`, data, a, b, retries)
	path := filepath.Join(t.TempDir(), "browser.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// domChart is what the page shows of one chart, read from the DOM.
type domChart struct {
	ID       string   `json:"id"`
	Declared int      `json:"declared"`
	Bars     int      `json:"bars"`
	Series   int      `json:"series"`
	Sum      int      `json:"sum"`
	Labels   []string `json:"labels"`
	N        []int    `json:"n"`
	XLabels  []string `json:"xlabels"`
	YLabels  []string `json:"ylabels"`
	Titles   []string `json:"titles"`
	Marker   string   `json:"marker"`
	Width    float64  `json:"width"`
}

const readCharts = `Array.from(document.querySelectorAll("svg.chart")).map(function (s) {
  var bars = Array.from(s.querySelectorAll("rect.bar"));
  var texts = function (sel) { return Array.from(s.querySelectorAll(sel)).map(function (e) { return e.textContent; }); };
  return { id: s.dataset.chart, declared: Number(s.dataset.bars || s.dataset.series || 0), bars: bars.length,
    series: s.querySelectorAll(".series").length,
    sum: bars.reduce(function (a, r) { return a + Number(r.dataset.n); }, 0),
    labels: bars.map(function (r) { return r.dataset.label || ""; }),
    n: bars.map(function (r) { return Number(r.dataset.n); }),
    xlabels: texts(".axis-label.x"), ylabels: texts(".axis-label.y"), titles: texts(".axis-title"),
    marker: texts(".marker-label").join(""), width: s.getBoundingClientRect().width };
})`

func chartsByID(t *testing.T, ctx context.Context) map[string]domChart {
	t.Helper()
	list, err := chromedp.Run(ctx, chromedp.Evaluate[[]domChart](readCharts))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]domChart{}
	for _, c := range list {
		out[c.ID] = c
	}
	return out
}

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(artifacts(t), name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}

// TestBrowser_Report opens the report of a finished simulated run in
// headless Chromium and checks what it shows against the store: every
// chart drawn, bars as many as the histogram's bins and adding up to the
// answers, axis labels, max_tokens marked with the share cut there, the
// record browser finding a record by its text and by dataset, and no
// console error (the page's security policy would report any request for
// something outside the file).
func TestBrowser_Report(t *testing.T) {
	ctx, consoleErrors := headless(t)
	spec := browserSpec(t, 0, true)
	if code, _, errs := eaglet("plan", spec); code != exitOK || errs != "" {
		t.Fatalf("plan: exit %d\n%s", code, errs)
	}
	if code, _, errs := eaglet("run", spec); code != exitFailure || !strings.Contains(errs, "failed") {
		t.Fatalf("run with injected 500s and no retries: exit %d, want %d for failed records\n%s", code, exitFailure, errs)
	}
	out := filepath.Join(t.TempDir(), "report.html")
	if code, _, errs := eaglet("report", "--out", out, spec); code != exitOK {
		t.Fatalf("report: exit %d\n%s", code, errs)
	}
	rows, _ := statusOf(t, spec)
	st, err := state.OpenReadOnly(filepath.Join(filepath.Dir(spec), "run", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()

	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+out), chromedp.WaitVisible("#records .record")); err != nil {
		t.Fatal(err)
	}
	charts := chartsByID(t, ctx)
	done, failed := map[string]int{}, 0
	for _, r := range rows {
		done[r.Instance] = r.Done
		failed += r.Failed
	}
	for _, ds := range []string{"chat", "code"} {
		inst := "generate[" + ds + "]"
		h, err := report.Lengths(context.Background(), st, inst)
		if err != nil {
			t.Fatal(err)
		}
		finishes, err := st.FinishCounts(context.Background(), inst)
		if err != nil {
			t.Fatal(err)
		}
		c := charts["completion-"+inst]
		if c.Bars != len(h.Counts) || c.Declared != c.Bars || c.Sum != done[inst] || c.Width < 100 {
			t.Errorf("%s completion chart: %d bars drawn (declared %d, %d bins), counting %d answers (status: %d), %.0f px wide",
				inst, c.Bars, c.Declared, len(h.Counts), c.Sum, done[inst], c.Width)
		}
		if want := "completion tokens (log scale)"; !slices.Contains(c.Titles, want) || len(c.XLabels) < 3 || len(c.YLabels) != 3 {
			t.Errorf("%s completion chart axes: titles %q, x labels %q, y labels %q; want the title %q", inst, c.Titles, c.XLabels, c.YLabels, want)
		}
		if want := fmt.Sprintf("max_tokens 512: %.1f%% cut", 100*float64(finishes["length"])/float64(done[inst])); c.Marker != want {
			t.Errorf("%s max_tokens marker %q, want %q", inst, c.Marker, want)
		}
		f := charts["finish-"+inst]
		if f.Bars != len(finishes) || f.Sum != done[inst] {
			t.Errorf("%s finish reasons: bars %q %v; store: %v", inst, f.Labels, f.N, finishes)
		}
		o := charts["outcomes-"+inst]
		if len(o.Labels) == 0 || o.Labels[0] != "answered" || o.N[0] != done[inst] {
			t.Errorf("%s outcomes: %q %v; want answered first, %d", inst, o.Labels, o.N, done[inst])
		}
		if dropped := done["generate["+ds+"]"] - done["filter["+ds+"]"]; !slices.Contains(o.Labels, "filter: dropped: keep: finish_reason == 'stop'") && dropped > 0 {
			t.Errorf("%s outcomes lack the filter's %d drops: %q", inst, dropped, o.Labels)
		}
		if p := charts["prompt-"+inst]; p.Bars == 0 || p.Sum != done[inst] {
			t.Errorf("%s prompt chart: %d bars counting %d", inst, p.Bars, p.Sum)
		}
	}
	// Failures by kind: in the outcomes of all datasets and over time.
	if o := charts["outcomes-all"]; !slices.Contains(o.Labels, "generate: failed: http 500") ||
		o.N[slices.Index(o.Labels, "generate: failed: http 500")] != failed {
		t.Errorf("outcomes of all datasets %q %v; want generate: failed: http 500, %d (status)", o.Labels, o.N, failed)
	}
	if f := charts["failures"]; f.Series != 1 || len(f.YLabels) != 3 {
		t.Errorf("failures over time: %d series, y labels %q; want http 500", f.Series, f.YLabels)
	}
	if all := charts["completion-all"]; all.Sum != done["generate[chat]"]+done["generate[code]"] {
		t.Errorf("all datasets: %d answers, want %d", all.Sum, done["generate[chat]"]+done["generate[code]"])
	}
	for id, series := range map[string]int{"tokens-per-second": 2, "requests-per-second": 2, "in-flight": 1, "first-token": 2, "burn": 2} {
		if c := charts[id]; c.Series != series || c.Declared != series || !slices.Contains(c.Titles, "time since the first request") {
			t.Errorf("%s: %d series (declared %d), titles %q; want %d series over time", id, c.Series, c.Declared, c.Titles, series)
		}
	}

	// Plan versus actual: the plan made before the run, for this spec,
	// beside what the run did.
	plan, err := chromedp.Run(ctx, chromedp.Evaluate[domPlan](readPlan))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(plan.Title, "made for the spec as it is") || plan.Changed || len(plan.Head) != 5 {
		t.Errorf("plan versus actual: title %q, changed %v, figures %q", plan.Title, plan.Changed, plan.Head)
	}
	for _, inst := range []string{"generate[chat]", "generate[code]"} {
		cells := plan.Rows[inst]
		// records (plan, actual), requests (plan, actual), ...: about 60
		// records each (cap runs in the plan's dry run, generate is
		// estimated), answered but for the 500s.
		if len(cells) != 10 || cells[0] != "~60" || cells[1] != fmt.Sprint(done[inst]) || cells[2] != "60" || cells[3] != fmt.Sprint(done[inst]) {
			t.Errorf("plan versus actual of %s: %q; want 60 planned and %d done", inst, cells, done[inst])
		}
		if len(cells) == 10 && (!strings.HasPrefix(cells[8], "$") || !strings.HasPrefix(cells[9], "$")) {
			t.Errorf("plan versus actual of %s: cost %q / %q", inst, cells[8], cells[9])
		}
	}
	if _, ok := plan.Rows["all"]; !ok {
		t.Errorf("plan versus actual has no row for all datasets: %v", plan.Rows)
	}
	// The budget burn-down: each dataset's budget against itself.
	if b := charts["budget"]; b.Series != 3 || !slices.Contains(b.Titles, "% of the limit") {
		t.Errorf("budget chart: %d series, titles %q; want both budgets and the limit", b.Series, b.Titles)
	}
	facts, err := chromedp.Run(ctx, chromedp.Evaluate[map[string]string](`Object.fromEntries(Array.from(
		document.querySelectorAll("#summary dl.facts div")).map(function (d) { return [d.querySelector("dt").textContent, d.querySelector("dd").textContent]; }))`))
	if err != nil {
		t.Fatal(err)
	}
	for _, inst := range []string{"generate[chat]", "generate[code]"} {
		if got := facts["budget "+inst+" completion_tokens"]; !strings.HasSuffix(got, " of 60000 ("+fmt.Sprint(int(0.5+100*float64(completed(t, st, inst))/60000))+"%)") {
			t.Errorf("budget of %s: %q", inst, got)
		}
	}

	// Find a record of code by a phrase of its answer.
	sample, err := st.Sample(context.Background(), "generate[code]", 5)
	if err != nil || len(sample) < 5 {
		t.Fatalf("sample: %v, %d", err, len(sample))
	}
	key, phrase := answerPhrase(t, sample[4].Data)
	if err := chromedp.Do(ctx, chromedp.SendKeys("#f-text", phrase)); err != nil {
		t.Fatal(err)
	}
	keys, err := chromedp.Run(ctx, chromedp.Poll[[]string](`(function () {
		var k = Array.from(document.querySelectorAll("#records .record")).map(function (r) { return r.dataset.key; });
		return k.length > 0 && k.length < 5 ? k : null; })()`, chromedp.WithPollingTimeout(5*time.Second)))
	if err != nil || !slices.Contains(keys, key) {
		t.Errorf("searching %q found %q (%v); want record %s", phrase, keys, err, key)
	}
	if _, err := chromedp.Run(ctx, chromedp.Evaluate[bool](`document.getElementById("f-text").value = "";
		document.getElementById("f-dataset").value = "chat";
		document.getElementById("f-dataset").dispatchEvent(new Event("input")); true`)); err != nil {
		t.Fatal(err)
	}
	datasets, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`Array.from(document.querySelectorAll("#records .record .head b")).map(function (b) { return b.textContent; })`))
	if err != nil || len(datasets) == 0 {
		t.Fatalf("records of chat: %v, %v", datasets, err)
	}
	for _, d := range datasets {
		if d != "chat" {
			t.Errorf("filtered on chat, the browser shows a record of %q", d)
			break
		}
	}
	screenshot(t, ctx, "report.png")
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// TestBrowser_ServeDuringRun opens `serve`'s page while a run is under way
// and checks that the charts are there and refresh from the store as the
// run commits, without console errors.
func TestBrowser_ServeDuringRun(t *testing.T) {
	ctx, consoleErrors := headless(t)
	spec := browserSpec(t, 300, false)
	ran := make(chan string, 1)
	go func() {
		code, _, errs := eaglet("run", spec)
		ran <- fmt.Sprintf("exit %d\n%s", code, errs)
	}()
	p, err := engine.Load(spec, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&liveReport{p: p})
	defer srv.Close()
	// Wait for the first answers, so the page has charts to draw.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if st, err := state.OpenReadOnly(p.Spec.State); err == nil {
			n, _ := st.CountOutputs([]string{"generate[chat]", "generate[code]"})
			st.Close()
			if n >= 10 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatal("no answers after 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible(`svg[data-chart="completion-generate[chat]"]`)); err != nil {
		t.Fatal(err)
	}
	first, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById("summary").dataset.generated`))
	if err != nil {
		t.Fatal(err)
	}
	screenshot(t, ctx, "serve-during-run.png")
	// The page fetches its charts again every few seconds.
	refreshed, err := chromedp.Run(ctx, chromedp.Poll[string](fmt.Sprintf(
		`document.getElementById("summary").dataset.generated !== %q ? document.getElementById("summary").dataset.generated : null`, first),
		chromedp.WithPollingTimeout(15*time.Second)))
	if err != nil {
		t.Fatalf("the live page did not refresh its charts (generated %s): %v", first, err)
	}
	t.Logf("charts of %s refreshed at %s", first, refreshed)
	charts := chartsByID(t, ctx)
	for _, id := range []string{"completion-generate[chat]", "finish-generate[chat]", "outcomes-generate[chat]", "tokens-per-second", "in-flight"} {
		if c, ok := charts[id]; !ok || (c.Bars == 0 && c.Series == 0) {
			t.Errorf("after the refresh, chart %s is missing or empty: %+v", id, c)
		}
	}
	if msg := <-ran; !strings.HasPrefix(msg, "exit 0") {
		t.Fatalf("run: %s", msg)
	}
	screenshot(t, ctx, "serve-after-refresh.png")
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}

// domPlan is the plan versus actual table as the page shows it.
type domPlan struct {
	Title   string              `json:"title"`
	Changed bool                `json:"changed"`
	Head    []string            `json:"head"`
	Rows    map[string][]string `json:"rows"`
}

const readPlan = `(function () {
  var s = document.getElementById("plan-vs-actual");
  var rows = {};
  s.querySelectorAll("tbody tr").forEach(function (tr) {
    rows[tr.dataset.instance] = Array.from(tr.querySelectorAll("td")).map(function (td) { return td.textContent; });
  });
  return { title: s.querySelector("h2").textContent, changed: s.dataset.changed === "true",
    head: Array.from(s.querySelectorAll("thead tr:first-child th[colspan]")).map(function (th) { return th.textContent; }), rows: rows };
})()`

// completed is the completion tokens of an instance's live answers, as
// its budget counts them.
func completed(t *testing.T, st *state.Store, inst string) int64 {
	t.Helper()
	c, err := st.AnswerCounts(context.Background(), inst)
	if err != nil || len(c) == 0 {
		t.Fatalf("answers of %s: %v", inst, err)
	}
	return c[0].CompletionTokens
}

// answerPhrase returns a stored record's key and the first words of its
// answer, enough to find it among the sample.
func answerPhrase(t *testing.T, data []byte) (key, phrase string) {
	t.Helper()
	var rec conv.Record
	if err := json.Unmarshal(data, &rec); err != nil || rec.Generation == nil {
		t.Fatalf("sampled record: %v", err)
	}
	words := strings.Fields(rec.Generation.Content)
	if len(words) < 10 {
		words = strings.Fields(rec.Generation.Reasoning + " " + rec.Generation.Content)
	}
	return rec.Key, strings.Join(words[:min(len(words), 10)], " ")
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d.Exception != nil {
		return d.Exception.Description
	}
	return ""
}

// TestBrowser_LossMask runs a spec whose prompts a tokenize stage encodes
// and SGLang's native API answers with output ids, opens a record in the
// report's browser and reads its token ids: the prompt's (loss mask 0)
// then the answer's (1), shaded, the boundary where the store has it. A
// spec edited after its plan is shown as changed since.
func TestBrowser_LossMask(t *testing.T) {
	ctx, consoleErrors := headless(t)
	url := simtest.Serve(t, server.Config{Model: sim.New(sim.Config{Seed: 5, MeanTokens: 60})})
	data, _ := filepath.Abs("../../specs/examples/data")
	tok, _ := filepath.Abs("../../internal/tokenizer/testdata/qwen3")
	spec := filepath.Join(t.TempDir(), "mask.yaml")
	src := fmt.Sprintf(`version: 1
name: mask
state: run/state.db
datasets:
  chat: {source: %s/chat.jsonl, format: messages}
endpoints:
  target: {api: sglang, urls: ["%s"], model: sim}
stages:
  - {name: load, uses: load, foreach: datasets, with: {limit: 30}}
  - {name: tokenize, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: "%s"}}
  - {name: generate, uses: generate, needs: [tokenize], foreach: datasets, with: {max_tokens: 200}}
`, data, url, tok)
	if err := os.WriteFile(spec, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"plan", "run"} {
		if code, _, errs := eaglet(cmd, spec); code != exitOK {
			t.Fatalf("%s: exit %d\n%s", cmd, code, errs)
		}
	}
	if err := os.WriteFile(spec, []byte(src+"# edited after the plan\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "report.html")
	if code, _, errs := eaglet("report", "--out", out, spec); code != exitOK {
		t.Fatalf("report: exit %d\n%s", code, errs)
	}
	st, err := state.OpenReadOnly(filepath.Join(filepath.Dir(spec), "run", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := chromedp.Do(ctx, chromedp.Navigate("file://"+out), chromedp.WaitVisible("#records .record")); err != nil {
		t.Fatal(err)
	}
	plan, err := chromedp.Run(ctx, chromedp.Evaluate[domPlan](readPlan))
	if err != nil || !plan.Changed || !strings.Contains(plan.Title, "it has changed since") {
		t.Errorf("plan of a spec edited since: %+v, %v; want it marked changed", plan, err)
	}

	// The first record shown: open it and its ids.
	type domIDs struct {
		Key     string   `json:"key"`
		Summary string   `json:"summary"`
		IDs     []int    `json:"ids"`
		Mask    []int    `json:"mask"`
		Shaded  int      `json:"shaded"`
		More    []string `json:"more"`
	}
	got, err := chromedp.Run(ctx, chromedp.Evaluate[domIDs](`(function () {
		var r = document.querySelector("#records .record");
		r.querySelector("details.conversation").open = true;
		var d = r.querySelector("details.tokens");
		d.open = true;
		d.dispatchEvent(new Event("toggle"));
		var spans = Array.from(d.querySelectorAll(".ids span[data-mask]"));
		return { key: r.dataset.key, summary: d.querySelector("summary").textContent,
			ids: spans.map(function (s) { return Number(s.textContent); }),
			mask: spans.map(function (s) { return Number(s.dataset.mask); }),
			shaded: spans.filter(function (s) { return s.classList.contains("sup") && getComputedStyle(s).backgroundColor !== "rgba(0, 0, 0, 0)"; }).length,
			more: Array.from(d.querySelectorAll(".ids .more")).map(function (s) { return s.textContent; }) };
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	var rec conv.Record
	sample, err := st.Sample(context.Background(), "generate[chat]", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, row := range sample {
		if row.Key == got.Key {
			json.Unmarshal(row.Data, &rec)
		}
	}
	if rec.Generation == nil || len(rec.PromptIDs) == 0 || len(rec.Generation.OutputIDs) == 0 {
		t.Fatalf("record %s in the store has no prompt or output ids: %+v", got.Key, rec)
	}
	// Short prompts and answers are shown whole: the prompt's ids, then the answer's.
	want := append(append([]int(nil), rec.PromptIDs...), rec.Generation.OutputIDs...)
	if len(want) > 256 {
		t.Fatalf("record %s has %d ids; the test wants them all shown", got.Key, len(want))
	}
	wantMask := make([]int, len(want))
	for i := len(rec.PromptIDs); i < len(want); i++ {
		wantMask[i] = 1
	}
	if !slices.Equal(got.IDs, want) || !slices.Equal(got.Mask, wantMask) || got.Shaded != len(rec.Generation.OutputIDs) || len(got.More) != 0 {
		t.Errorf("record %s shows ids %v\nmask %v (%d shaded, %q)\nwant %v\nmask %v", got.Key, got.IDs, got.Mask, got.Shaded, got.More, want, wantMask)
	}
	if wantSum := fmt.Sprintf("(%d prompt, not supervised; %d answer, supervised)", len(rec.PromptIDs), len(rec.Generation.OutputIDs)); !strings.Contains(got.Summary, wantSum) {
		t.Errorf("ids fold %q; want %q", got.Summary, wantSum)
	}
	screenshot(t, ctx, "report-loss-mask.png")
	if errs := consoleErrors(); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
}
