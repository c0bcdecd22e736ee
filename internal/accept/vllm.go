package accept

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"strconv"

	"github.com/eaglet-dev/eaglet/internal/promtext"
)

// vLLM's speculative-decoding counters (vllm/v1/spec_decode/metrics.py,
// SpecDecodingProm), one series per engine, labelled model_name and engine,
// the per-position one also by position.
const (
	vllmDrafts      = "vllm:spec_decode_num_drafts_total"
	vllmDraftTokens = "vllm:spec_decode_num_draft_tokens_total"
	vllmAccepted    = "vllm:spec_decode_num_accepted_tokens_total"
	vllmPerPos      = "vllm:spec_decode_num_accepted_tokens_per_pos_total"
)

// ErrNoSpecCounters says a server exports no speculative-decoding
// counters: vLLM started without a speculative_config, or not vLLM.
var ErrNoSpecCounters = errors.New("no vllm:spec_decode counters: is the server running with a --speculative-config?")

// ErrCounterReset says a counter went down between two scrapes: the
// server restarted, and the group's figures are lost.
var ErrCounterReset = errors.New("a vllm:spec_decode counter went down: the server restarted")

// Counters are vLLM's speculative-decoding counters at one scrape,
// summed over the server's engines: totals since it started.
type Counters struct {
	Drafts, DraftTokens, Accepted int
	// PerPosition[j] counts drafts whose token at position j was accepted.
	PerPosition []int
}

// ReadCounters reads the counters from a /metrics body, keeping the
// series of the served model named (every model's when model is "").
func ReadCounters(r io.Reader, model string) (Counters, error) {
	samples, err := promtext.Parse(r)
	if err != nil {
		return Counters{}, err
	}
	var c Counters
	found := false
	for _, s := range samples {
		if !isSpec(s.Name) || model != "" && s.Labels["model_name"] != model {
			continue
		}
		if s.Value < 0 || s.Value != math.Trunc(s.Value) || s.Value > 1<<53 {
			return Counters{}, fmt.Errorf("%s %g is not a count", s.Name, s.Value)
		}
		found = true
		n := int(s.Value)
		switch s.Name {
		case vllmDrafts:
			c.Drafts += n
		case vllmDraftTokens:
			c.DraftTokens += n
		case vllmAccepted:
			c.Accepted += n
		case vllmPerPos:
			j, err := strconv.Atoi(s.Labels["position"])
			if err != nil || j < 0 || j > 1024 {
				return Counters{}, fmt.Errorf("%s: position %q", s.Name, s.Labels["position"])
			}
			for len(c.PerPosition) <= j {
				c.PerPosition = append(c.PerPosition, 0)
			}
			c.PerPosition[j] += n
		}
	}
	if !found {
		return Counters{}, ErrNoSpecCounters
	}
	return c, nil
}

func isSpec(name string) bool {
	switch name {
	case vllmDrafts, vllmDraftTokens, vllmAccepted, vllmPerPos:
		return true
	}
	return false
}

// Scrape fetches url (a server's /metrics) and reads its counters for
// model ("" for all).
func Scrape(ctx context.Context, client *http.Client, url, model string) (Counters, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Counters{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return Counters{}, fmt.Errorf("scrape %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Counters{}, fmt.Errorf("scrape %s: %s", url, resp.Status)
	}
	c, err := ReadCounters(resp.Body, model)
	if err != nil {
		return Counters{}, fmt.Errorf("scrape %s: %w", url, err)
	}
	return c, nil
}

// Group is what vLLM's counters say of one group of requests: the
// difference between a scrape before the group was sent and one after its
// last answer. The figure is the group's, not any one request's: vLLM
// counts per server, so a request's share is unknown, and the figure is
// the group's only if nothing else ran on the server meanwhile.
type Group struct {
	Counters
}

// Since returns the group measured between scrape before and c, after.
func (c Counters) Since(before Counters) (Group, error) {
	g := Group{Counters{Drafts: c.Drafts - before.Drafts, DraftTokens: c.DraftTokens - before.DraftTokens,
		Accepted: c.Accepted - before.Accepted}}
	if g.Drafts < 0 || g.DraftTokens < 0 || g.Accepted < 0 || len(c.PerPosition) < len(before.PerPosition) {
		return Group{}, ErrCounterReset
	}
	if len(c.PerPosition) > 0 {
		g.PerPosition = make([]int, len(c.PerPosition))
		for j, n := range c.PerPosition {
			if j < len(before.PerPosition) {
				n -= before.PerPosition[j]
			}
			if n < 0 {
				return Group{}, ErrCounterReset
			}
			g.PerPosition[j] = n
		}
	}
	return g, nil
}

// Measurement is the group's figure with its requests' completion tokens,
// which the client counts from their usage.
func (g Group) Measurement(completionTokens int) Measurement {
	return Measurement{CompletionTokens: completionTokens, Verify: g.Drafts, Accepted: g.Accepted,
		Drafted: g.DraftTokens, Counted: true, PerPosition: g.PerPosition}
}
