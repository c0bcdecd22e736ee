package accept

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
)

// postJSON posts body to url and decodes the answer into out.
func postJSON(url string, body, out any) error {
	b, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(b))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(resp.Body).Decode(out)
}

// twoEngines is a data-parallel vLLM's /metrics: two engines, the series
// of another model, and the metrics around them.
const twoEngines = `# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.
# TYPE vllm:spec_decode_num_drafts_total counter
vllm:spec_decode_num_drafts_total{model_name="m",engine="0"} 10.0
vllm:spec_decode_num_drafts_total{model_name="m",engine="1"} 5.0
vllm:spec_decode_num_drafts_total{model_name="other",engine="0"} 100.0
vllm:spec_decode_num_drafts_created{model_name="m",engine="0"} 1.7e+09
vllm:spec_decode_num_draft_tokens_total{model_name="m",engine="0"} 30.0
vllm:spec_decode_num_draft_tokens_total{model_name="m",engine="1"} 15.0
vllm:spec_decode_num_accepted_tokens_total{model_name="m",engine="0"} 20.0
vllm:spec_decode_num_accepted_tokens_total{model_name="m",engine="1"} 7.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="m",engine="0",position="0"} 9.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="m",engine="0",position="1"} 7.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="m",engine="0",position="2"} 4.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="m",engine="1",position="0"} 4.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="m",engine="1",position="1"} 2.0
vllm:spec_decode_num_accepted_tokens_per_pos_total{model_name="m",engine="1",position="2"} 1.0
vllm:num_requests_running{model_name="m",engine="0"} 3.0
`

func TestReadCounters(t *testing.T) {
	for _, c := range []struct {
		name, text, model string
		want              Counters
		err               string
	}{
		{"engines add up, another model's series are left out", twoEngines, "m",
			Counters{Drafts: 15, DraftTokens: 45, Accepted: 27, PerPosition: []int{13, 9, 5}}, ""},
		{"every model's", twoEngines, "",
			Counters{Drafts: 115, DraftTokens: 45, Accepted: 27, PerPosition: []int{13, 9, 5}}, ""},
		{"no speculative decoding", "vllm:num_requests_running{engine=\"0\"} 1.0\n", "", Counters{}, ErrNoSpecCounters.Error()},
		{"not a count", "vllm:spec_decode_num_drafts_total 1.5\n", "", Counters{}, "not a count"},
		{"a bad position", "vllm:spec_decode_num_accepted_tokens_per_pos_total{position=\"x\"} 1\n", "", Counters{}, `position "x"`},
	} {
		got, err := ReadCounters(strings.NewReader(c.text), c.model)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: error %v, want %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

func TestCounters_Since(t *testing.T) {
	before := Counters{Drafts: 10, DraftTokens: 30, Accepted: 20, PerPosition: []int{9, 7, 4}}
	after := Counters{Drafts: 14, DraftTokens: 42, Accepted: 25, PerPosition: []int{12, 8, 5}}
	g, err := after.Since(before)
	if want := (Group{Counters{Drafts: 4, DraftTokens: 12, Accepted: 5, PerPosition: []int{3, 1, 1}}}); err != nil || !reflect.DeepEqual(g, want) {
		t.Errorf("got %+v, %v; want %+v", g, err, want)
	}
	if m := g.Measurement(30); acceptLength(m) != 7.5 || m.CompletionTokens != 30 || !m.Counted {
		t.Errorf("measurement %+v", m)
	}
	if _, err := before.Since(after); !errors.Is(err, ErrCounterReset) {
		t.Errorf("counters gone down: error %v", err)
	}
}

// acceptLength is a measurement's figure, as a row of it sums it.
func acceptLength(m Measurement) float64 { return Sum([]Row{{Measurement: m}}).AcceptLength() }

func TestScrape_Errors(t *testing.T) {
	hs := httptest.NewServer(http.NotFoundHandler())
	defer hs.Close()
	if _, err := Scrape(context.Background(), hs.Client(), hs.URL+"/metrics", ""); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("a 404: error %v", err)
	}
}

// TestGroup_EqualsTheSumOverIt is the acceptance test of vLLM-style
// measurement: against the sim-server, which reports both ways, the
// counters' difference over a group of concurrent requests equals the sum
// of what SGLang's meta_info reports of each, group after group.
func TestGroup_EqualsTheSumOverIt(t *testing.T) {
	m := sim.New(sim.Config{Seed: 9, MeanTokens: 150})
	url := simtest.Serve(t, server.Config{Model: m, Drafter: sim.Drafter{Quality: 0.7, Tokens: 4}, Speed: 20000})
	ctx := context.Background()
	before, err := Scrape(ctx, http.DefaultClient, url+"/metrics", "sim")
	if err != nil {
		t.Fatal(err)
	}
	for group := range 3 {
		size := 4 + group*3
		metas := make([]Measurement, size)
		var wg sync.WaitGroup
		for i := range size {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var body struct {
					MetaInfo json.RawMessage `json:"meta_info"`
				}
				err := postJSON(url+"/generate", map[string]any{"text": fmt.Sprintf("group %d request %d", group, i),
					"sampling_params": map[string]any{"max_new_tokens": 600}}, &body)
				if err == nil {
					metas[i], _, err = ParseSGLang(body.MetaInfo)
				}
				if err != nil {
					t.Error(err)
				}
			}()
		}
		wg.Wait()
		after, err := Scrape(ctx, http.DefaultClient, url+"/metrics", "sim")
		if err != nil {
			t.Fatal(err)
		}
		g, err := after.Since(before)
		if err != nil {
			t.Fatal(err)
		}
		var want Group
		want.PerPosition = make([]int, 4)
		completion := 0
		for _, mi := range metas {
			want.Drafts += mi.Verify
			want.DraftTokens += mi.Drafted
			want.Accepted += mi.Accepted
			completion += mi.CompletionTokens
			for j, n := range mi.PerPosition {
				want.PerPosition[j] += n
			}
		}
		if !reflect.DeepEqual(g, want) {
			t.Fatalf("group %d of %d: counters moved by %+v, the requests sum to %+v", group, size, g, want)
		}
		rows := make([]Row, size)
		for i, mi := range metas {
			rows[i] = Row{Requests: 1, Measurement: mi}
		}
		if got, sum := acceptLength(g.Measurement(completion)), Sum(rows).AcceptLength(); got != sum {
			t.Fatalf("group %d: acceptance length %g from the counters, %g from the requests", group, got, sum)
		}
		before = after
	}
}
