package endpoint

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages/serving/backend"
	"github.com/eaglet-dev/eaglet/stages/serving/backend/pool"
)

// Guards that stop an endpoint early, or refuse an answer, when waiting or
// storing would only waste the run: a server that never answers, one that
// rejects every request alike, one that answered another prompt than the
// one sent.

// maxProbe bounds how long the first request waits to learn that a server
// answers at all: a GET of a cheap path is answered in milliseconds by any
// server that is up, even one busy generating.
const maxProbe = 30 * time.Second

// shortTimeout is the timeout below which a timed-out answer without
// streaming says that it biases the data: long answers take minutes.
const shortTimeout = 10 * time.Minute

// same400Limit is how many requests in a row, before any succeeded, must
// get the same 400 for the endpoint to stop: one message for every prompt
// is the server refusing the request's form (token-id prompts, an
// option), not the records.
const same400Limit = 8

// guard holds an endpoint's early-stop state.
type guard struct {
	pool      *pool.Pool
	auth      pool.Auth
	probePath string
	// probed is closed once the probe has answered, with probeErr; the
	// requests that come meanwhile wait for it on the channel rather
	// than a sync.Once's lock, which a test in virtual time (synctest)
	// could not wait out.
	probeOnce sync.Once
	probed    chan struct{}
	probeErr  error

	mu       sync.Mutex
	answered bool   // a request has succeeded
	last400  string // the message of the 400s in a row so far
	same400  int
	// longest is, per URL, the most prompt tokens the server has said it
	// read of one prompt: its context holds at least that many.
	longest map[string]int
	// miscounts is set once the endpoint has been found counting prompts
	// otherwise than the tokenize stage (and the run told so).
	miscounts bool
	logf      func(string, ...any)
}

// probe checks once per run, before the first request, that the server
// answers at all, so a dead one fails the run in at most maxProbe (or the
// request timeout) rather than the timeout of every record and retry.
func (e *Endpoint) probe(ctx context.Context, timeout time.Duration) error {
	g := &e.guard
	if g.pool == nil {
		return nil
	}
	first := false
	g.probeOnce.Do(func() { g.probed, first = make(chan struct{}), true })
	if !first {
		<-g.probed
		return g.probeErr
	}
	defer close(g.probed)
	wait := min(timeout, maxProbe)
	pctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if err := g.pool.Probe(pctx, g.probePath, g.auth); err != nil && ctx.Err() == nil {
		g.probeErr = &backend.Error{Kind: backend.Fatal, Msg: fmt.Sprintf("endpoint %s stopped: its server accepts connections but answered nothing in %s (%v); check that it is up and serving, then run again", e.Spec.Name, wait, err)}
		e.fatal.CompareAndSwap(nil, g.probeErr.(*backend.Error))
	}
	return g.probeErr
}

// observe notes a request's outcome and stops the endpoint when the same
// 400 has come back for the first same400Limit requests.
func (e *Endpoint) observe(err error, be *backend.Error) {
	g := &e.guard
	g.mu.Lock()
	defer g.mu.Unlock()
	if err == nil {
		g.answered = true
		return
	}
	if g.answered || be == nil || be.Status != 400 || be.Kind != backend.Permanent {
		g.last400, g.same400 = "", 0
		return
	}
	if be.Msg != g.last400 {
		g.last400, g.same400 = be.Msg, 0
	}
	g.same400++
	if g.same400 >= same400Limit {
		e.fatal.CompareAndSwap(nil, &backend.Error{Kind: backend.Fatal, Status: 400,
			Msg: fmt.Sprintf("endpoint %s stopped: the first %d requests all got the same answer, so the server refuses the requests' form rather than the records (check the endpoint's api and options); if only some records cause it, drop them (tokenize's max_prompt_tokens): %s", e.Spec.Name, g.same400, be.Msg)})
	}
}

// minCutContext is the least a server that cut a prompt to its context
// has read of it: no ollama num_ctx in use is smaller, so a shorter read
// is a count of its own (a Modelfile template rendering tools otherwise),
// not a cut.
const minCutContext = 1024

// TruncatedPrompt returns an error when the answer proves that the server
// cut the prompt to its context: the answer is to the prompt's cut-off
// start and must not be stored as one to this. vLLM and SGLang refuse a
// prompt longer than their context with a 400, so only a server known to
// cut (ollama truncates to num_ctx and answers 200; its responses say so,
// system_fingerprint "fp_ollama") can have, and only when it read at
// least minCutContext tokens, no fewer than of any prompt it read whole
// (a cut prompt fills the context), and clearly fewer than were sent. Any
// other difference is the server counting otherwise than eaglet (its own
// chat template, tools rendered differently): the answer is kept, the run
// told once with the figures, and the handoff labels the row's context.
func (e *Endpoint) TruncatedPrompt(gen *conv.Generation, sent int) error {
	if sent == 0 || gen.PromptTokens == 0 {
		return nil
	}
	url := ""
	if gen.Timing != nil {
		url = gen.Timing.URL
	}
	g := &e.guard
	g.mu.Lock()
	defer g.mu.Unlock()
	longest := g.longest[url]
	short := sent - gen.PromptTokens
	if short <= 16 || short*20 <= sent {
		// A few tokens' difference is a chat template's.
		g.readWhole(url, gen.PromptTokens)
		return nil
	}
	if gen.CutsPrompts && gen.PromptTokens >= minCutContext && gen.PromptTokens >= longest {
		return &backend.Error{Kind: backend.Permanent, Msg: fmt.Sprintf("prompt truncated by the server: it read %d prompt tokens of the %d sent, as many as fill its context, so the answer is to the prompt's cut-off start; raise the server's context (ollama: num_ctx in the Modelfile or the request's options) or drop long prompts (tokenize's max_prompt_tokens, endpoint %s's context:)", gen.PromptTokens, sent, e.Spec.Name)}
	}
	g.readWhole(url, gen.PromptTokens)
	if !g.miscounts && g.logf != nil {
		g.logf("warning: endpoint %s counts prompts otherwise than the tokenize stage: it read %d tokens of a prompt counted as %d; answers are kept (a server that refuses over-long prompts did not cut it), but check that the tokenize stage's tokenizer and chat template are the served model's: the handoff labels such rows' context mismatch (eaglet sim-server counts with its own unless given -tokenizer)",
			e.Spec.Name, gen.PromptTokens, sent)
	}
	g.miscounts = true
	return nil
}

// readWhole notes that the server at url read a prompt of n tokens whole:
// its context holds at least that many. The caller holds g.mu.
func (g *guard) readWhole(url string, n int) {
	if n > g.longest[url] {
		if g.longest == nil {
			g.longest = map[string]int{}
		}
		g.longest[url] = n
	}
}
