package server

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/eaglet-dev/eaglet/internal/sim"
)

// serverDefaultTemperature is what SGLang and vLLM sample at when a
// request names no temperature (without a generation_config.json).
const serverDefaultTemperature = 1.0

// speculate decodes a with the server's drafter at the request's
// temperature (the server's default when nil); nil without a drafter.
func (s *Server) speculate(p *sim.Prompt, a *sim.Answer, temperature *float64) *sim.Speculation {
	if !s.cfg.Drafter.On() {
		return nil
	}
	t := serverDefaultTemperature
	if temperature != nil {
		t = *temperature
	}
	sp := s.cfg.Model.Speculate(s.cfg.Drafter, *p, a, t)
	return &sp
}

// pace is how much faster than a token a step the answer decodes.
func pace(sp *sim.Speculation) float64 {
	if sp == nil {
		return 1
	}
	return sp.Pace
}

// addSpecMeta adds a finished request's speculative-decoding figures to
// its meta_info under SGLang 0.5's names, as its tokenizer manager does
// with --speculative-algorithm set (_calculate_spec_decoding_metrics):
// acceptance length is completion tokens over verify steps, the prefill's
// token and each step's bonus token included; acceptance rate is accepted
// over proposed draft tokens, verify steps times the draft tokens a step
// (--speculative-num-draft-tokens minus 1). With no verify step SGLang
// sends zeros and no counts. Newer SGLang renames the counts
// (spec_num_correct_drafts, spec_num_proposed_drafts); older sends
// spec_verify_ct alone.
func addSpecMeta(meta map[string]any, sp *sim.Speculation, completion int) {
	if sp == nil {
		return
	}
	meta["spec_verify_ct"] = sp.Verify
	meta["spec_accept_rate"] = 0.0
	meta["spec_accept_length"] = 0
	if sp.Verify == 0 {
		return
	}
	meta["spec_accept_rate"] = float64(sp.Accepted) / float64(sp.Drafted)
	meta["spec_accept_length"] = float64(completion) / float64(sp.Verify)
	meta["spec_accept_token_num"] = sp.Accepted
	meta["spec_draft_token_num"] = sp.Drafted
	meta["spec_accept_histogram"] = sp.Histogram
}

// specCounters are vLLM's speculative-decoding counters
// (vllm/v1/spec_decode/metrics.py, SpecDecodingProm), counted when a
// request finishes: vLLM counts each step as it runs, so the two agree
// once every request sent has been answered.
type specCounters struct {
	mu                            sync.Mutex
	drafts, draftTokens, accepted int64
	perPos                        []int64
	created                       float64
}

func newSpecCounters(d sim.Drafter) *specCounters {
	if !d.On() {
		return nil
	}
	return &specCounters{perPos: make([]int64, d.Tokens), created: float64(time.Now().UnixNano()) / 1e9}
}

func (c *specCounters) add(sp *sim.Speculation) {
	if c == nil || sp == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.drafts += int64(sp.Verify)
	c.draftTokens += int64(sp.Drafted)
	c.accepted += int64(sp.Accepted)
	for j, n := range sp.PerPosition {
		c.perPos[j] += int64(n)
	}
}

// write appends the counters as vLLM's Prometheus client writes them:
// HELP and TYPE under the _total name, labels model_name and engine (and
// position), Python's float spelling, and each counter's _created gauge
// after it.
func (c *specCounters) write(b *strings.Builder, model string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	labels := fmt.Sprintf("model_name=%q,engine=\"0\"", model)
	counter := func(name, help string, series []string, values []int64) {
		fmt.Fprintf(b, "# HELP vllm:%s_total %s\n# TYPE vllm:%s_total counter\n", name, help, name)
		for i, v := range values {
			fmt.Fprintf(b, "vllm:%s_total{%s} %s\n", name, series[i], pyFloat(float64(v)))
		}
		fmt.Fprintf(b, "# HELP vllm:%s_created %s\n# TYPE vllm:%s_created gauge\n", name, help, name)
		for i := range values {
			fmt.Fprintf(b, "vllm:%s_created{%s} %s\n", name, series[i], pyFloat(c.created))
		}
	}
	one := []string{labels}
	counter("spec_decode_num_drafts", "Number of spec decoding drafts.", one, []int64{c.drafts})
	counter("spec_decode_num_draft_tokens", "Number of draft tokens.", one, []int64{c.draftTokens})
	counter("spec_decode_num_accepted_tokens", "Number of accepted tokens.", one, []int64{c.accepted})
	positions := make([]string, len(c.perPos))
	for j := range positions {
		positions[j] = fmt.Sprintf("%s,position=\"%d\"", labels, j)
	}
	counter("spec_decode_num_accepted_tokens_per_pos", "Accepted tokens per draft position.", positions, c.perPos)
}

// pyFloat spells v as Python's repr does for the values written here:
// whole numbers with ".0".
func pyFloat(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if !strings.ContainsAny(s, ".eE") {
		s += ".0"
	}
	return s
}
