package generate

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages/generate/backend"
	"github.com/eaglet-dev/eaglet/stages/generate/backend/pool"
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
	probeOnce sync.Once
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
func (e *endpoint) probe(ctx context.Context, timeout time.Duration) error {
	g := &e.guard
	if g.pool == nil {
		return nil
	}
	g.probeOnce.Do(func() {
		wait := min(timeout, maxProbe)
		pctx, cancel := context.WithTimeout(ctx, wait)
		defer cancel()
		if err := g.pool.Probe(pctx, g.probePath, g.auth); err != nil && ctx.Err() == nil {
			g.probeErr = &backend.Error{Kind: backend.Fatal, Msg: fmt.Sprintf("endpoint %s stopped: its server accepts connections but answered nothing in %s (%v); check that it is up and serving, then run again", e.spec.Name, wait, err)}
			e.fatal.CompareAndSwap(nil, g.probeErr.(*backend.Error))
		}
	})
	return g.probeErr
}

// observe notes a request's outcome and stops the endpoint when the same
// 400 has come back for the first same400Limit requests.
func (e *endpoint) observe(err error, be *backend.Error) {
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
			Msg: fmt.Sprintf("endpoint %s stopped: the first %d requests all got the same answer, so the server refuses the requests' form rather than the records (check the endpoint's api and options); if only some records cause it, drop them (tokenize's max_prompt_tokens): %s", e.spec.Name, g.same400, be.Msg)})
	}
}

// truncatedPrompt returns an error when the server says it read fewer
// prompt tokens than were sent: it cut the prompt to its context (ollama
// does, silently, and answers 200), so the answer is to another prompt and
// must not be stored as one to this. A few tokens' difference is left to
// chat templates that differ slightly between eaglet and the server. A
// prompt no longer than one the same server has read whole fits its
// context, so reading fewer of it is the server counting with another
// tokenizer or template than the tokenize stage's: the answer is kept and
// the run told once, as the handoff's ids come from that tokenizer.
func (e *endpoint) truncatedPrompt(gen *conv.Generation, sent int) error {
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
	if gen.PromptTokens > longest {
		if g.longest == nil {
			g.longest = map[string]int{}
		}
		g.longest[url] = gen.PromptTokens
	}
	short := sent - gen.PromptTokens
	if short <= 16 || short*20 <= sent {
		return nil
	}
	if sent <= longest {
		if !g.miscounts && g.logf != nil {
			g.logf("endpoint %s counts prompts otherwise than the tokenize stage: it read %d tokens of a prompt counted as %d, and %d of another, so it did not cut this one to its context; answers are kept, but check that the tokenize stage's tokenizer and chat template are the served model's (the handoff's token ids come from them; eaglet sim-server counts with its own)",
				e.spec.Name, gen.PromptTokens, sent, longest)
		}
		g.miscounts = true
		return nil
	}
	return &backend.Error{Kind: backend.Permanent, Msg: fmt.Sprintf("prompt truncated by the server: it read %d prompt tokens, fewer than were sent, so the answer is to the prompt's cut-off start; raise the server's context (ollama: num_ctx; vLLM: --max-model-len), or drop long prompts (tokenize's max_prompt_tokens, endpoint %s's context:); if the server never cuts prompts (vLLM and SGLang refuse long ones), it counts with another tokenizer or chat template than the tokenize stage's: point tokenize at the served model", gen.PromptTokens, e.spec.Name)}
}

// sentTokens is how many prompt tokens a request sent, when eaglet knows
// exactly: the token ids, or the tokenize stage's count of the record's own
// prompt on its first request (later ones carry the target's answers); 0
// when unknown.
func sentTokens(rec *conv.Record, msgs []conv.Message, ids []int, steps int) int {
	if len(ids) > 0 {
		return len(ids)
	}
	if steps == 1 && len(msgs) == len(rec.Prompt()) {
		return rec.PromptTokens
	}
	return 0
}

// exactPromptTokens is the prompt's length when the tokenize stage counted
// it, else 0: skipping a record on a guess would lose good records.
func exactPromptTokens(rec *conv.Record) int {
	if len(rec.PromptIDs) > 0 {
		return len(rec.PromptIDs)
	}
	return rec.PromptTokens
}
