package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	stdhtml "html"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/internal/report"
	"github.com/eaglet-dev/eaglet/state"
)

// TestReport_CLI runs a spec over two sim servers and checks what the run
// and `eaglet report` leave: the page beside the store and where asked,
// self-contained, the answers' timing per URL in the store, and status's
// sparkline of answer lengths.
func TestReport_CLI(t *testing.T) {
	spec := browserSpec(t, 0, false)
	code, _, errs := eaglet("run", spec)
	if code != exitOK {
		t.Fatalf("run: exit %d\n%s", code, errs)
	}
	beside := filepath.Join(filepath.Dir(spec), "run", "report.html")
	if !strings.Contains(errs, "report: "+beside) {
		t.Errorf("the run does not name its report %s:\n%s", beside, errs)
	}
	if _, err := os.Stat(beside); err != nil {
		t.Errorf("no report beside the store: %v", err)
	}
	out := filepath.Join(t.TempDir(), "r.html")
	if code, stdout, errs := eaglet("report", "--out", out, spec); code != exitOK || !strings.Contains(stdout, "wrote "+out) {
		t.Fatalf("report: exit %d\n%s%s", code, stdout, errs)
	}
	page, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	html := string(page)
	if ref := regexp.MustCompile(`(?i:(src|href)\s*=\s*["']?[a-z]*:?//)|<link|@import|url\(`).FindString(html); ref != "" {
		t.Errorf("the report refers to something outside itself: %q", ref)
	}
	for _, want := range []string{`data-chart="completion-generate[chat]"`, `data-chart="tokens-per-second"`, `id="record-data"`} {
		if !strings.Contains(html, want) {
			t.Errorf("the report lacks %s", want)
		}
	}

	st, err := state.OpenReadOnly(filepath.Join(filepath.Dir(spec), "run", "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ids := []string{"generate[chat]", "generate[code]"}
	first, last, err := st.TimeSpan(context.Background(), ids)
	if err != nil || first == 0 || last < first {
		t.Fatalf("answers carry no timing: %d..%d, %v", first, last, err)
	}
	bins, err := st.Timeline(context.Background(), ids, first, last-first+1)
	if err != nil {
		t.Fatal(err)
	}
	urls := map[string]int{}
	for _, b := range bins {
		urls[b.URL] += b.Done
	}
	if len(urls) != 2 {
		t.Errorf("answers by URL %v; want both sim servers", urls)
	}

	rows, _ := statusOf(t, spec)
	for _, r := range rows {
		if r.Stage != "generate" {
			continue
		}
		sum := 0
		for _, c := range r.Lengths.Counts {
			sum += c
		}
		if sum != r.Done || r.Lengths.MaxTokens != 512 {
			t.Errorf("%s: status --json lengths count %d answers of %d, max_tokens %d", r.Instance, sum, r.Done, r.Lengths.MaxTokens)
		}
	}
	if _, stdout, _ := eaglet("status", spec); !regexp.MustCompile(`answer lengths [▁▂▃▄▅▆▇█ ]+ +\d+\.\.\d+ tok, (log|linear); \d+\.\d% cut at max_tokens 512`).MatchString(stdout) {
		t.Errorf("status shows no sparkline of answer lengths:\n%s", stdout)
	}
}

func TestServe_RefusesToExposeTheStore(t *testing.T) {
	spec := quickSpec(t)
	tests := []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"serve", "--addr", "0.0.0.0:0", spec}, nil, "is not a loopback address"},
		{[]string{"serve", "--addr", "0.0.0.0:0", "--allow-remote", spec}, nil, "needs a token of at least 16 characters in $EAGLET_SERVE_TOKEN"},
		{[]string{"serve", "--addr", "0.0.0.0:0", "--allow-remote", spec}, map[string]string{serveTokenVar: "short"}, "needs a token"},
		{[]string{"serve", "--addr", "nonsense", spec}, nil, "--addr \"nonsense\""},
	}
	for _, tt := range tests {
		code, _, errs := eagletEnv(tt.env, tt.args...)
		if code != exitUsage || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, %q; want exit %d saying %q", tt.args[1:4], code, errs, exitUsage, tt.want)
		}
	}
}

// TestServe_Access checks the live page's guards over HTTP: the Host of a
// loopback server, the token of a remote one (once in the URL, then the
// cookie it sets), the security policy, and the page before any run.
func TestServe_Access(t *testing.T) {
	spec := quickSpec(t)
	p, err := engine.Load(spec, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	local := httptest.NewServer(&liveReport{p: p})
	defer local.Close()
	get := func(url, host string, cookies ...*http.Cookie) (*http.Response, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, url, nil)
		if host != "" {
			req.Host = host
		}
		for _, c := range cookies {
			req.AddCookie(c)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	if resp, body := get(local.URL+"/", ""); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(body, "run the spec first") {
		t.Errorf("before any run: %d %q", resp.StatusCode, body)
	}
	if code, _, errs := eaglet("run", spec); code != exitOK {
		t.Fatalf("run: %s", errs)
	}
	const token = "0123456789abcdef-secret"
	remote := httptest.NewServer(&liveReport{p: p, token: token})
	defer remote.Close()
	resp, _ := get(remote.URL+"/?token="+token, "")
	cookies := resp.Cookies()
	tests := []struct {
		name, url, host string
		cookies         []*http.Cookie
		status          int
		contains        string
	}{
		{"loopback page", local.URL + "/", "", nil, http.StatusOK, `data-chart="completion-generate[chat]"`},
		{"loopback charts only", local.URL + "/?part=charts", "", nil, http.StatusOK, `id="summary"`},
		{"another host name (DNS rebinding)", local.URL + "/", "evil.example:8080", nil, http.StatusForbidden, "only requests for localhost"},
		{"localhost by name", local.URL + "/", "localhost:8080", nil, http.StatusOK, "eaglet report"},
		{"remote without token", remote.URL + "/", "", nil, http.StatusUnauthorized, "missing or wrong token"},
		{"remote with a wrong token", remote.URL + "/?token=0123456789abcdef-wrong", "", nil, http.StatusUnauthorized, "missing or wrong token"},
		{"remote with the token", remote.URL + "/?token=" + token, "", nil, http.StatusOK, "eaglet report"},
		{"remote with the cookie", remote.URL + "/", "", cookies, http.StatusOK, "eaglet report"},
		{"unknown path", local.URL + "/x", "", nil, http.StatusNotFound, ""},
	}
	for _, tt := range tests {
		resp, body := get(tt.url, tt.host, tt.cookies...)
		if resp.StatusCode != tt.status || !strings.Contains(body, tt.contains) {
			t.Errorf("%s: %d, want %d with %q", tt.name, resp.StatusCode, tt.status, tt.contains)
		}
		if resp.StatusCode == http.StatusOK && resp.Header.Get("Content-Security-Policy") != securityPolicy {
			t.Errorf("%s: no security policy", tt.name)
		}
		if strings.Contains(body, token) {
			t.Errorf("%s: the page shows the token", tt.name)
		}
	}
	if len(cookies) != 1 || !cookies[0].HttpOnly {
		t.Errorf("the token's cookie: %+v", cookies)
	}
	if _, body := get(local.URL+"/?part=charts", ""); strings.Contains(body, "<html") {
		t.Error("?part=charts sends the whole page")
	}
}

// TestRun_ReportNeverOverAFileOfTheUser: the run writes report.html beside
// the store over an earlier report, never over a file of the user's own.
func TestRun_ReportNeverOverAFileOfTheUser(t *testing.T) {
	tests := []struct {
		name, before string
		written      bool
	}{
		{"the user's own file", "<html>my notes</html>", false},
		{"an earlier report", "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n" + generatorMark + "\nold", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spec := quickSpec(t)
			path := filepath.Join(filepath.Dir(spec), "runs", "quickstart", "report.html")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(tt.before), 0o644); err != nil {
				t.Fatal(err)
			}
			code, _, errs := eaglet("run", spec)
			if code != exitOK {
				t.Fatalf("run: exit %d\n%s", code, errs)
			}
			after, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if written := string(after) != tt.before; written != tt.written {
				t.Errorf("report written over it: %v, want %v\n%s", written, tt.written, errs)
			}
			if !tt.written && !strings.Contains(errs, "is not an eaglet report; move it away") {
				t.Errorf("the run does not say why it left the file:\n%s", errs)
			}
		})
	}
}

// TestPlan_RecordsForTheReport: plan records its figures in the store
// (creating it before the first run), and records nothing while a run
// holds the store, saying so: that run is compared with the plan before it.
func TestPlan_RecordsForTheReport(t *testing.T) {
	spec := quickSpec(t)
	p, err := engine.Load(spec, func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	last := func() *state.Plan {
		t.Helper()
		st, err := state.OpenReadOnly(p.Spec.State)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		pl, err := st.LastPlan(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return pl
	}
	if code, _, errs := eaglet("plan", spec); code != exitOK || errs != "" {
		t.Fatalf("plan: exit %d\n%s", code, errs)
	}
	first := last()
	var body report.RecordedPlan
	if first == nil || json.Unmarshal(first.Body, &body) != nil || first.SpecFP != specFingerprint(p) {
		t.Fatalf("recorded plan %+v; want this spec's", first)
	}
	steps := map[string]report.PlanStep{}
	for _, s := range body.Steps {
		steps[s.Instance] = s
	}
	if g := steps["generate[chat]"]; !g.Run || g.Todo != 120 || g.CompletionTokens == 0 {
		t.Errorf("generate[chat] recorded as %+v; want 120 requests to send", g)
	}

	run, err := state.Open(p.Spec.State)
	if err != nil {
		t.Fatal(err)
	}
	defer run.Close()
	if err := run.Lock(); err != nil {
		t.Fatal(err)
	}
	code, _, errs := eaglet("plan", spec)
	if want := fmt.Sprintf("plan not recorded for the report: a run (pid %d) is using the store", os.Getpid()); code != exitOK || !strings.Contains(errs, want) {
		t.Errorf("plan beside a run: exit %d, %q; want %q", code, errs, want)
	}
	if again := last(); !again.Made.Equal(first.Made) {
		t.Errorf("a plan made beside a run replaced the one before it")
	}
}

// TestReport_Evaluation runs the evaluate example (two drafters and the
// baseline, each server launched in turn) and checks that the report's
// Drafter acceptance section, recomputed from the store's rows with the
// stage's own buckets, order and seed, shows the figures the stage wrote
// to its JSON file.
func TestReport_Evaluation(t *testing.T) {
	if testing.Short() {
		t.Skip("builds eaglet, whose sim-servers the spec launches")
	}
	out := t.TempDir()
	vars := map[string]string{"EAGLET": buildEaglet(t), "OUT": out}
	var stdout, stderr bytes.Buffer
	env := &cmdEnv{stdout: &stdout, stderr: &stderr, getenv: func(k string) string { return vars[k] },
		lookupEnv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok }}
	spec := "../../specs/examples/evaluate.yaml"
	if code := runMain(env, []string{"run", "--allow-outside", spec}); code != exitOK {
		t.Fatalf("run exited %d:\n%s", code, stderr.String())
	}
	page := filepath.Join(out, "r.html")
	if code := runMain(env, []string{"report", "--allow-outside", "--out", page, spec}); code != exitOK {
		t.Fatalf("report exited %d:\n%s", code, stderr.String())
	}
	html := stdhtml.UnescapeString(readFile(page))
	var rep struct {
		Drafters []struct {
			Name, Drafter, Sampling string
			Total                   struct {
				AcceptLength float64 `json:"acceptance_length"`
			}
		}
		Comparisons []struct {
			A, B, Sampling, Figure string
			Value, Low, High       float64
		}
	}
	if err := json.Unmarshal([]byte(readFile(filepath.Join(out, "evaluation.json"))), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Drafters) != 6 || len(rep.Comparisons) != 6 {
		t.Fatalf("evaluation.json has %d sides and %d comparisons; want 6 each (3 sides and 3 comparisons, 2 samplings)", len(rep.Drafters), len(rep.Comparisons))
	}
	section := func(sampling string) string {
		_, s, _ := strings.Cut(html, `data-stage="evaluate" data-sampling="`+sampling+`"`)
		s, _, _ = strings.Cut(s, `<div class="acceptance"`)
		return s
	}
	for _, d := range rep.Drafters {
		if d.Drafter == "" {
			continue
		}
		if want := fmt.Sprintf(`<tr data-side="%s"><th>%s</th><td>%.2f</td>`, d.Name, d.Name, d.Total.AcceptLength); !strings.Contains(section(d.Sampling), want) {
			t.Errorf("%s at %s: the report has no %s", d.Name, d.Sampling, want)
		}
	}
	for _, c := range rep.Comparisons {
		want := fmt.Sprintf(`<td>%+.2f</td><td>95%%: %+.2f to %+.2f</td>`, c.Value, c.Low, c.High)
		if c.Figure == "speed_up" {
			want = fmt.Sprintf(`<td>%.2fx</td><td>95%%: %.2fx to %.2fx</td>`, c.Value, c.Low, c.High)
		}
		if !strings.Contains(section(c.Sampling), `<tr data-a="`+c.A+`" data-b="`+c.B+`">`) || !strings.Contains(section(c.Sampling), want) {
			t.Errorf("%s against %s at %s: the report has no %s", c.B, c.A, c.Sampling, want)
		}
	}
	for _, chart := range []string{`data-chart="accept-dataset-evaluate-temperature=0"`, `data-chart="accept-context-evaluate-temperature=0.7"`} {
		if !strings.Contains(html, chart) {
			t.Errorf("the report has no %s", chart)
		}
	}
}
