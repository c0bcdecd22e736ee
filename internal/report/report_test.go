package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/state"
)

// synthRun is one run of a synthetic store: n answers per dataset sent
// from start, one every gap, each taking 2 s.
type synthRun struct {
	n     int
	start time.Time
	gap   time.Duration
}

const synthMaxTokens = 4096

// synthStore writes a store as two datasets' load → generate would leave
// it, with answers of lognormal lengths (those at max_tokens cut there),
// answered by two URLs, and returns it with the report's input.
func synthStore(tb testing.TB, runs ...synthRun) (*state.Store, Input) {
	tb.Helper()
	path := filepath.Join(tb.TempDir(), "state.db")
	if keep := os.Getenv("EAGLET_BENCH_STORE"); keep != "" {
		path = keep
	}
	reuse := state.Exists(path)
	st, err := state.Open(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { st.Close() })
	in := Input{Spec: "synthetic", SpecPath: "synthetic.yaml", StatePath: path}
	filler := strings.Repeat("a plausible answer of some length ", 12)
	for _, ds := range []string{"a", "b"} {
		load, gen := "load["+ds+"]", "generate["+ds+"]"
		in.Instances = append(in.Instances, Instance{ID: load, Stage: "load", Dataset: ds},
			Instance{ID: gen, Stage: "generate", Dataset: ds, Endpoint: "target", Price: &Price{Input: 0.6, Output: 2.5},
				Upstream: []string{load}, EstCompletion: 600})
		for _, id := range []string{load, gen} {
			if err := st.PutInstance(&state.Instance{ID: id, Stage: strings.Split(id, "[")[0], Dataset: ds, Status: "done"}); err != nil {
				tb.Fatal(err)
			}
		}
		key := 0
		for _, r := range runs {
			if reuse {
				break
			}
			var loads, gens []state.Item
			flush := func() {
				if err := st.Commit(load, loads); err != nil {
					tb.Fatal(err)
				}
				if err := st.Commit(gen, gens); err != nil {
					tb.Fatal(err)
				}
				loads, gens = loads[:0], gens[:0]
			}
			for i := range r.n {
				k := fmt.Sprintf("%s%08d", ds, key)
				key++
				// A deterministic lognormal: median 400 tokens, sigma 1.
				u := (float64(key%997) + 0.5) / 997
				ctok := min(synthMaxTokens, int(400*math.Exp(probit(u))))
				finish := "stop"
				if ctok == synthMaxTokens {
					finish = "length"
				}
				rec := conv.Record{Key: k, Dataset: ds, Messages: []conv.Message{{Role: conv.User, Content: "question " + k}},
					Generation: &conv.Generation{Content: "answer " + k + " " + filler, FinishReason: finish,
						CompletionTokens: ctok, PromptTokens: 20 + key%300, MaxTokens: synthMaxTokens}}
				data, _ := json.Marshal(rec)
				sent := r.start.Add(time.Duration(i) * r.gap).UnixMilli()
				prompt := rec
				prompt.Generation = nil
				prompt.Messages = []conv.Message{{Role: conv.User, Content: "question " + k + " " + filler}}
				pdata, _ := json.Marshal(prompt)
				loads = append(loads, state.Item{Key: k, Data: pdata})
				gens = append(gens, state.Item{Key: k, InChash: "c" + k, Data: data, PromptTokens: rec.Generation.PromptTokens, CompletionTokens: ctok,
					Finish: finish, Sent: sent, FirstToken: sent + 100, Finished: sent + 2000, URL: "http://gpu" + strconv.Itoa(key%2)})
				if len(gens) == 2000 {
					flush()
				}
			}
			flush()
		}
	}
	return st, in
}

// probit is the standard normal quantile, by bisection (precise enough here).
func probit(p float64) float64 {
	lo, hi := -8.0, 8.0
	for range 60 {
		mid := (lo + hi) / 2
		if 0.5*math.Erfc(-mid/math.Sqrt2) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// TestBuild_ShowsTheLastRun: a store of two runs an hour apart charts the
// second over time, with the tokens of the first counted in what is spent.
func TestBuild_ShowsTheLastRun(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	second := t0.Add(time.Hour)
	st, in := synthStore(t, synthRun{n: 200, start: t0, gap: 50 * time.Millisecond},
		synthRun{n: 100, start: second, gap: 100 * time.Millisecond})
	p, err := Build(context.Background(), st, in)
	if err != nil {
		t.Fatal(err)
	}
	if want := "the run from " + second.Local().Format("2006-01-02 15:04:05"); !strings.HasSuffix(p.TimelineTitle, want) {
		// The window opens at the first bin after the idle stretch: within
		// one bin (of 36 s) of the second run's start.
		got, err := time.ParseInLocation("2006-01-02 15:04:05", strings.TrimPrefix(p.TimelineTitle, "Over time: the run from "), time.Local)
		if err != nil || got.Before(t0.Add(50*time.Minute)) || got.After(second) {
			t.Errorf("timeline %q; want the run from about %s", p.TimelineTitle, want)
		}
	}
	var burn Chart
	for _, c := range p.Timeline {
		if c.ID == "burn" {
			burn = c
		}
	}
	if !strings.Contains(string(burn.SVG), `data-series="2"`) {
		t.Errorf("burn chart has not its 2 series (spent, estimate): %s", burn.SVG)
	}
	if p.Total != 600 || p.Sampled != 600 {
		t.Errorf("%d answers, %d sampled; want 600 and 600", p.Total, p.Sampled)
	}
	if len(p.Sections) != 3 || p.Sections[0].ID != "all" {
		t.Fatalf("sections %d, want all datasets and one each", len(p.Sections))
	}
	facts := map[string]string{}
	for _, f := range p.Summary {
		facts[f.Label] = f.Value
	}
	if facts["answers"] != "600" || facts["records left"] != "0" || !strings.HasPrefix(facts["cost so far"], "$") {
		t.Errorf("summary %v", facts)
	}
	var buf bytes.Buffer
	if err := p.Render(&buf); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "max_tokens 4096: ") {
		t.Error("the page does not mark max_tokens")
	}
}

// BenchmarkReport builds and renders the report of a store of
// $EAGLET_BENCH_RECORDS answers (default 1,000,000, in two datasets) and
// reports the page's size.
func BenchmarkReport(b *testing.B) {
	n := 1_000_000
	if v := os.Getenv("EAGLET_BENCH_RECORDS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatal(err)
		}
	}
	start := time.Now()
	st, in := synthStore(b, synthRun{n: n / 2, start: time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC), gap: 10 * time.Millisecond})
	b.Logf("store of %d answers written in %s", n, time.Since(start).Round(time.Second))
	// With a plan to compare and a budget on each dataset, the figures
	// cover every query the page makes.
	var steps []PlanStep
	for i := range in.Instances {
		in.Instances[i].Budget = &Budget{Limits: func(specs.InputInfo) (map[string]float64, error) {
			return map[string]float64{"completion_tokens": 1e9, "dollars": 5000}, nil
		}}
		steps = append(steps, PlanStep{Instance: in.Instances[i].ID, Run: true, Records: n / 2, Todo: n / 2})
	}
	body, _ := json.Marshal(RecordedPlan{Steps: steps})
	if err := st.SavePlan(context.Background(), state.Plan{Made: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC), Body: body}, time.Second); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	var size int
	for b.Loop() {
		p, err := Build(context.Background(), st, in)
		if err != nil {
			b.Fatal(err)
		}
		var buf bytes.Buffer
		if err := p.Render(&buf); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB/page")
}
