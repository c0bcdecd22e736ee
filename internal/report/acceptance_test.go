package report

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/accept"
	"github.com/eaglet-dev/eaglet/state"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// evalRows builds an evaluation as an evaluate stage with a baseline and
// two drafters leaves it: prompts of two datasets and context lengths
// across three buckets, at two samplings; group > 1 makes each row a
// group of that many requests, as vLLM's counters are read.
func evalRows(group int) []accept.Row {
	var rows []accept.Row
	for ti, sampling := range []string{"temperature=0", "temperature=0.7"} {
		for si, s := range []struct{ name, drafter string }{{"baseline", ""}, {"v1", "h1"}, {"v2", "h2"}} {
			for p := range 24 {
				ds := []string{"chat", "code"}[p%2]
				tokens := 100 + 7*p
				r := accept.Row{Drafter: s.drafter, Name: s.name, Target: "target", Sampling: sampling,
					Prompt: fmt.Sprintf("p%02d", p), Dataset: ds, Turn: 1 + p%3, ContextTokens: []int{300, 1500, 5000}[p%3],
					Requests: group, Latency: time.Duration(tokens) * time.Second / time.Duration(400+si*150+p)}
				r.CompletionTokens = tokens
				if s.drafter != "" {
					// Longer contexts and code are accepted further, v2 more
					// so, and less at a temperature.
					r.Verify = tokens * 10 / (15 + 3*si + p%3 + 2*(p%2) - 2*ti)
					r.Drafted, r.Accepted, r.Counted = 3*r.Verify, tokens-r.Verify, true
				}
				rows = append(rows, r)
			}
		}
	}
	return rows
}

// TestBuild_Acceptance renders the Drafter acceptance section from the
// rows of the store's evaluations: absent without one, its bars adding up
// to each drafter's total, drafters compared in the spec's order, and the
// page of two drafters and a baseline as its golden file.
func TestBuild_Acceptance(t *testing.T) {
	for _, tc := range []struct {
		name   string
		rows   []accept.Row
		ev     Evaluation
		golden string
		want   []string
	}{
		{name: "no evaluation"},
		{name: "drafters and baseline", rows: evalRows(1), ev: Evaluation{Buckets: accept.Buckets{1000, 4000}, Drafters: []string{"v1", "v2"}},
			golden: "acceptance.golden", want: []string{`<tr data-a="v1" data-b="v2">`, `<tr data-a="baseline" data-b="v1">`, "measured per request"}},
		{name: "spec order", rows: evalRows(1), ev: Evaluation{Drafters: []string{"v2", "v1"}},
			want: []string{`<tr data-a="v2" data-b="v1">`, `data-label="0-1k"`, `data-label="4k-8k"`}},
		{name: "per group", rows: evalRows(8), want: []string{"measured per group of requests", `<tr data-a="v1" data-b="v2">`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, in := synthStore(t, synthRun{n: 4, start: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), gap: time.Second})
			at := time.Date(2026, 3, 1, 11, 0, 0, 0, time.UTC)
			var ids []string
			for i, r := range tc.rows {
				id := fmt.Sprintf("e%04d", i)
				if err := st.Evaluations().Put("evaluate", id, at.Add(time.Duration(i)*time.Millisecond), r); err != nil {
					t.Fatal(err)
				}
				ids = append(ids, id)
			}
			if err := st.Evaluations().Claim("evaluate", ids); err != nil {
				t.Fatal(err)
			}
			in.Evaluations = map[string]Evaluation{"evaluate": tc.ev}
			html := renderPage(t, st, in)
			section := acceptanceSection(html)
			if (section != "") != (tc.rows != nil) {
				t.Fatalf("acceptance section shown: %v, want %v", section != "", tc.rows != nil)
			}
			for _, w := range tc.want {
				if !strings.Contains(section, w) {
					t.Errorf("no %s in the section", w)
				}
			}
			checkBarsAddUp(t, section, tc.rows)
			if tc.golden != "" {
				compareGolden(t, filepath.Join("testdata", tc.golden), section)
			}
		})
	}
}

func renderPage(t *testing.T, st *state.Store, in Input) string {
	t.Helper()
	p, err := Build(context.Background(), st, in)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := p.Render(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.String()
}

// acceptanceSection cuts the Drafter acceptance section out of a page.
func acceptanceSection(html string) string {
	i := strings.Index(html, `<details class="section" id="acceptance"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(html[i:], "</details>")
	return html[i : i+j+len("</details>")]
}

var (
	chartRE = regexp.MustCompile(`data-chart="(accept-[a-z]+)-evaluate-(temperature=[0-9.]+)".*?</svg>`)
	barRE   = regexp.MustCompile(`data-series="([^"]+)" data-value="[0-9.]+" data-tokens="(\d+)" data-verify="(\d+)"`)
)

// checkBarsAddUp checks that each chart's bars of a drafter add up to the
// drafter's completion tokens and verify steps at that sampling.
func checkBarsAddUp(t *testing.T, section string, rows []accept.Row) {
	t.Helper()
	charts := chartRE.FindAllStringSubmatch(section, -1)
	if rows != nil && len(charts) != 4 {
		t.Errorf("%d charts, want 4: by dataset and by context at each sampling", len(charts))
	}
	for _, c := range charts {
		sums := map[string][2]int{}
		for _, b := range barRE.FindAllStringSubmatch(c[0], -1) {
			tok, _ := strconv.Atoi(b[2])
			ver, _ := strconv.Atoi(b[3])
			s := sums[b[1]]
			sums[b[1]] = [2]int{s[0] + tok, s[1] + ver}
		}
		for _, d := range []string{"v1", "v2"} {
			var of []accept.Row
			for _, r := range rows {
				if r.Name == d && r.Sampling == c[2] {
					of = append(of, r)
				}
			}
			f := accept.Sum(of)
			if got, want := sums[d], [2]int{f.CompletionTokens, f.Verify}; got != want {
				t.Errorf("%s at %s: %s's bars add up to %v tokens and verify steps, its total is %v", c[1], c[2], d, got, want)
			}
		}
		if _, ok := sums["baseline"]; ok {
			t.Errorf("%s at %s: the baseline has bars; it drafts nothing", c[1], c[2])
		}
	}
}

func compareGolden(t *testing.T, path, got string) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("section differs from %s (rerun with -update to accept):\n%s", path, got)
	}
}
