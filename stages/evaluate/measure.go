package evaluate

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/internal/accept"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/endpoint"
)

// unit is what one row of the results table measures: a prompt, or a
// group of prompts measured together from vLLM's counters.
type unit struct {
	id string
	// group names a group by its prompts alone, the same on every side,
	// so two sides' groups pair up; "" for a prompt measured alone.
	group   string
	members []*prompt
}

// units splits prompts into what side s measures at t, a row each: a
// prompt each, or with groups, runs of up to Group prompts of one dataset,
// turn and context bucket, in the order of their prompts' hashes, so the
// same prompts make the same groups on every side and in every run.
func (e *Evaluate) units(s *side, t float64, prompts []prompt, groups bool) []unit {
	type keyed struct {
		id string
		p  *prompt
	}
	type part struct {
		dataset string
		turn    int
		bucket  int
	}
	parts := map[part][]keyed{}
	var order []part
	var out []unit
	for i := range prompts {
		p := &prompts[i]
		id := e.identity(s, t, p)
		if !groups {
			out = append(out, unit{id: id, members: []*prompt{p}})
			continue
		}
		k := part{p.dataset, p.turn, e.buckets.Index(p.tokens)}
		if _, ok := parts[k]; !ok {
			order = append(order, k)
		}
		parts[k] = append(parts[k], keyed{id, p})
	}
	for _, k := range order {
		members := parts[k]
		slices.SortFunc(members, func(a, b keyed) int { return cmp.Compare(a.p.chatHash, b.p.chatHash) })
		for run := range slices.Chunk(members, e.opts.Group) {
			ids, names := sha256.New(), sha256.New()
			u := unit{}
			for _, m := range run {
				ids.Write([]byte(m.id))
				names.Write([]byte(m.p.chatHash))
				u.members = append(u.members, m.p)
			}
			u.id = "group:" + hex.EncodeToString(ids.Sum(nil))[:32]
			u.group = fmt.Sprintf("group %s of %d", hex.EncodeToString(names.Sum(nil))[:16], len(run))
			out = append(out, u)
		}
	}
	return out
}

// found looks units up in the results table.
func (e *Evaluate) lookUp(units []unit) (map[string]accept.Row, error) {
	if e.inst.Results == nil {
		return map[string]accept.Row{}, nil
	}
	ids := make([]string, len(units))
	for i, u := range units {
		ids[i] = u.id
	}
	return e.inst.Results.Measured(ids)
}

// measure measures side s (the i-th) at temperature t on prompts: what the
// results table holds is found again, the rest is sent, and the servers
// eaglet launches for the side start only then.
func (e *Evaluate) measure(ctx context.Context, i int, s *side, t float64, prompts []prompt) error {
	if s.ep.TakesIDs {
		for _, p := range prompts {
			if p.ids == nil {
				return fmt.Errorf("endpoint %s takes token ids and record %s turn %d has none: tokenize the records first, or set `tokenizer:` so each turn is rendered with the chat template", s.ep.Spec.Name, p.key, p.turn)
			}
		}
	}
	// Which way the side reports decides the rows; a side whose rows are
	// all stored either way needs no server to tell.
	units, have, err := e.stored(s, t, prompts)
	if err != nil {
		return err
	}
	if len(have) < len(units) {
		if err := s.ep.Launch(ctx); err != nil {
			return err
		}
		if !s.known {
			if s.groups, err = e.reportsCounters(ctx, s); err != nil {
				return err
			}
			s.known = true
			if units, have, err = e.stored(s, t, prompts); err != nil {
				return err
			}
		}
	}
	var todo []unit
	for _, u := range units {
		if r, ok := have[u.id]; ok {
			e.keep(i, t, u.id, r)
		} else {
			todo = append(todo, u)
		}
	}
	found := len(units) - len(todo)
	e.found.Add(int64(found))
	if len(todo) == 0 {
		return nil
	}
	e.log("%s at %s: measuring %d of %d %s (%d found in the results table)", s.name, sampling(t), len(todo), len(units),
		map[bool]string{false: "prompts", true: "groups"}[s.groups], found)
	if s.groups {
		return e.measureGroups(ctx, i, s, t, todo)
	}
	return e.measureRequests(ctx, i, s, t, todo)
}

// stored returns side s's units at t and the rows the results table
// holds of them. While the side's way of reporting is not known (auto on
// an openai endpoint: SGLang's meta_info or vLLM's counters), it takes the
// way whose rows are all stored, if one is, and else per request until
// the servers tell.
func (e *Evaluate) stored(s *side, t float64, prompts []prompt) ([]unit, map[string]accept.Row, error) {
	switch {
	case s.known:
	case e.opts.Measure == "requests", e.opts.Measure == "auto" && s.ep.Spec.API == "sglang":
		s.groups, s.known = false, true
	case e.opts.Measure == "groups":
		s.groups, s.known = true, true
	}
	modes := []bool{s.groups}
	if !s.known {
		modes = []bool{false, true}
	}
	var units []unit
	var have map[string]accept.Row
	for _, groups := range modes {
		u := e.units(s, t, prompts, groups)
		h, err := e.lookUp(u)
		if err != nil {
			return nil, nil, err
		}
		if units == nil || len(h) == len(u) {
			units, have, s.groups = u, h, groups
		}
		if len(h) == len(u) {
			break
		}
	}
	return units, have, nil
}

// reportsCounters reports whether side s's servers export vLLM's
// speculative-decoding counters, read per group.
func (e *Evaluate) reportsCounters(ctx context.Context, s *side) (bool, error) {
	_, err := e.scrape(ctx, s)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, accept.ErrNoSpecCounters):
		return false, nil
	}
	// No readable /metrics: a server that reports per request, if at all.
	e.log("%s: %v; reading each answer's meta_info instead", s.name, err)
	return false, nil
}

// scrapeClient reads servers' /metrics.
var scrapeClient = &http.Client{Timeout: 10 * time.Second}

// scrape sums vLLM's counters over side s's servers.
func (e *Evaluate) scrape(ctx context.Context, s *side) (accept.Counters, error) {
	urls := s.ep.MetricsURLs()
	if len(urls) == 0 {
		return accept.Counters{}, fmt.Errorf("endpoint %s has no URL to read /metrics from", s.ep.Spec.Name)
	}
	var sum accept.Counters
	for _, u := range urls {
		c, err := accept.Scrape(ctx, scrapeClient, u, "")
		if err != nil {
			return accept.Counters{}, err
		}
		sum.Drafts += c.Drafts
		sum.DraftTokens += c.DraftTokens
		sum.Accepted += c.Accepted
		for j, n := range c.PerPosition {
			for len(sum.PerPosition) <= j {
				sum.PerPosition = append(sum.PerPosition, 0)
			}
			sum.PerPosition[j] += n
		}
	}
	return sum, nil
}

// answer is what one request brought back.
type answer struct {
	completion, prompt int
	meta               []byte
	latency            time.Duration
}

// ask sends prompt p to side s at temperature t, asking for its meta_info
// when meta is set.
func (e *Evaluate) ask(ctx context.Context, s *side, t float64, p *prompt, meta bool) (answer, error) {
	temp := t
	req := &backend.Request{Key: p.key, Messages: p.msgs, Tools: p.tools, MaxTokens: e.opts.MaxTokens,
		Sampling: backend.Sampling{Temperature: &temp}}
	if s.ep.TakesIDs {
		req.InputIDs = p.ids
	}
	var a answer
	sent := time.Now()
	// The latency is the answered attempt's: a retried one's wait is the
	// server's failure, not its speed.
	req.Sent = func() { sent = time.Now() }
	if meta {
		req.MetaInfo = func(raw []byte) { a.meta = raw }
	}
	var tl endpoint.Tally
	g, err := s.client.Ask(ctx, req, &tl)
	e.sent.Add(int64(tl.Requests))
	if err != nil {
		return a, fmt.Errorf("record %s turn %d: %w", p.key, p.turn, err)
	}
	a.latency = time.Since(sent)
	a.completion, a.prompt = g.CompletionTokens, g.PromptTokens
	if a.prompt == 0 {
		a.prompt = p.tokens
	}
	return a, nil
}

// row is the row of side s at t for what u measured.
func (e *Evaluate) row(s *side, t float64, u unit) accept.Row {
	p := u.members[0]
	r := accept.Row{Drafter: s.drafter, Name: s.name, Target: cmp.Or(s.ep.Spec.Model, s.ep.Spec.Name), Sampling: sampling(t),
		Prompt: p.key, Dataset: p.dataset, Turn: p.turn, Requests: len(u.members)}
	if u.group != "" {
		r.Prompt = u.group
	}
	return r
}

// store keeps a measured row in the results table and the evaluation.
func (e *Evaluate) store(i int, t float64, id string, r accept.Row) error {
	if e.inst.Results != nil {
		if err := e.inst.Results.Put(e.inst.ID, id, e.inst.Shared.Now(), r); err != nil {
			return err
		}
	}
	e.keep(i, t, id, r)
	return nil
}

// measureRequests sends each unit's prompt, as many at once as the
// endpoint takes, and reads each answer's meta_info.
func (e *Evaluate) measureRequests(ctx context.Context, i int, s *side, t float64, todo []unit) error {
	work := make(chan unit)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for range min(s.ep.Concurrency, len(todo)) {
		wg.Go(func() {
			for u := range work {
				err := e.measureOne(ctx, i, s, t, u)
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, u := range todo {
		select {
		case work <- u:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
	}
	close(work)
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	return failed(errs, len(todo))
}

func (e *Evaluate) measureOne(ctx context.Context, i int, s *side, t float64, u unit) error {
	p := u.members[0]
	a, err := e.ask(ctx, s, t, p, true)
	if err != nil {
		return err
	}
	r := e.row(s, t, u)
	r.ContextTokens, r.Latency = a.prompt, a.latency
	r.CompletionTokens = a.completion
	if a.meta != nil {
		m, _, err := accept.ParseSGLang(a.meta)
		if err != nil {
			return fmt.Errorf("record %s turn %d: %w", p.key, p.turn, err)
		}
		// Without speculative decoding (the baseline, or a server that
		// does not report it) the row holds the answer's tokens and time.
		m.CompletionTokens = cmp.Or(m.CompletionTokens, a.completion)
		r.Measurement = m
	}
	return e.store(i, t, u.id, r)
}

// measureGroups sends each group's prompts together, one group at a
// time, and reads vLLM's counters before and after: the difference is the
// group's figure, exact as long as nothing else runs on the servers.
func (e *Evaluate) measureGroups(ctx context.Context, i int, s *side, t float64, todo []unit) error {
	var errs []error
	for _, u := range todo {
		if err := e.measureGroup(ctx, i, s, t, u); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			errs = append(errs, err)
		}
	}
	return failed(errs, len(todo))
}

func (e *Evaluate) measureGroup(ctx context.Context, i int, s *side, t float64, u unit) error {
	before, err := e.scrape(ctx, s)
	if err != nil {
		return err
	}
	answers := make([]answer, len(u.members))
	errs := make([]error, len(u.members))
	var wg sync.WaitGroup
	for j, p := range u.members {
		wg.Go(func() { answers[j], errs[j] = e.ask(ctx, s, t, p, false) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("%s: %w", u.id, err)
	}
	after, err := e.scrape(ctx, s)
	if err != nil {
		return err
	}
	g, err := after.Since(before)
	if err != nil {
		return fmt.Errorf("%s: %w", u.id, err)
	}
	r := e.row(s, t, u)
	completion := 0
	for _, a := range answers {
		completion += a.completion
		r.ContextTokens += a.prompt
		r.Latency += a.latency
	}
	// A group's context is its prompts' mean, within its bucket.
	r.ContextTokens /= len(answers)
	r.Measurement = g.Measurement(completion)
	return e.store(i, t, u.id, r)
}

// failed sums up the failures of n measurements: the first few, and how
// many in all; the next run measures them again.
func failed(errs []error, n int) error {
	if len(errs) == 0 {
		return nil
	}
	var out *multierror.Error
	for _, err := range errs[:min(3, len(errs))] {
		out = multierror.Append(out, err)
	}
	if len(errs) > 3 {
		out = multierror.Append(out, fmt.Errorf("and %d more", len(errs)-3))
	}
	return fmt.Errorf("%d of %d measurements failed (the next run measures them again): %w", len(errs), n, out)
}
