package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
)

func init() {
	register(command{
		name:    "sim-server",
		summary: "serve a simulated model over SGLang and OpenAI HTTP APIs",
		run:     runSimServer,
		examples: []example{
			{"a simulated SGLang and OpenAI-compatible server on 127.0.0.1:30000", "eaglet sim-server"},
			{"one that fails 5% of requests with 500 and 5% with 429", "eaglet sim-server --fail-500 0.05 --fail-429 0.05"},
			{"decoding at 50 tokens/s a sequence into a bounded KV cache, as SGLang schedules", "eaglet sim-server --speed 50 --kv-tokens 160000 --mean-tokens 2000"},
			{"a speculative-decoding server: the target with a drafter of quality 0.7 drafting 3 tokens a step", "eaglet sim-server --speed 60 --draft-quality 0.7 --num-speculative-tokens 3"},
		},
	})
}

func runSimServer(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "sim-server", "[flags]", "Serves the simulated target model over HTTP: SGLang's /generate and the OpenAI chat and\ncompletions routes, with a continuous-batching scheduler and fault injection.")
	addr := fs.String("addr", "127.0.0.1:30000", "listen address")
	var mc sim.Config
	var cfg server.Config
	mc.Flags(fs)
	cfg.Drafter.Flags(fs)
	draftDir := fs.String("speculative-draft-model-path", "", "a simulated drafter's directory, as SGLang's flag names a trained one: its config.json's \"eaglet_sim\" settings (draft_quality, num_speculative_tokens, draft_cost) replace the -draft flags")
	fs.StringVar(&cfg.Name, "model", "sim", "served model name")
	fs.Float64Var(&cfg.Speed, "speed", 0, "decode tokens/s per sequence (0: instant)")
	fs.Float64Var(&cfg.PrefillSpeed, "prefill-speed", 0, "prefill tokens/s of the server; decoding waits meanwhile (0: free)")
	fs.IntVar(&cfg.MaxRunning, "max-running", 0, "most sequences decoding at once (0: unlimited)")
	fs.IntVar(&cfg.KVTokens, "kv-tokens", 0, "KV-cache capacity in tokens; overflow retracts sequences (0: unlimited)")
	fs.IntVar(&cfg.ClipEstimate, "clip-estimate", 4096, "most output tokens admission reserves for a sequence, as SGLANG_CLIP_MAX_NEW_TOKENS_ESTIMATION")
	fs.Float64Var(&cfg.Slowdown, "slowdown", 0.5, "extra decode time per sequence at a full batch")
	fs.StringVar(&cfg.Reasoning, "reasoning-format", server.ReasoningContent,
		"how chat returns reasoning: reasoning_content, reasoning or think (inline)")
	fs.IntVar(&cfg.StreamInterval, "stream-interval", 1, "fewest tokens in one stream event, as SGLang's --stream-interval")
	fs.BoolVar(&cfg.Incremental, "incremental", false, "stream /generate deltas instead of cumulative output")
	fs.BoolVar(&cfg.FlatErrors, "flat-errors", false, `send OpenAI-route errors as {"object":"error",...}`)
	fs.BoolVar(&cfg.Comments, "comments", false, "send ': OPENROUTER PROCESSING' SSE comments")
	fs.StringVar(&cfg.Stack.ModelPath, "model-path", "", "checkpoint /get_server_info names, as SGLang's --model-path (default: the served name)")
	fs.StringVar(&cfg.Stack.Quantization, "quantization", "", "quantization /get_server_info reports, as SGLang's --quantization (fp8, ...)")
	fs.StringVar(&cfg.Stack.WeightVersion, "weight-version", "default", "weight version /get_server_info and meta_info report, as SGLang's --weight-version")
	fs.StringVar(&cfg.Stack.Provider, "provider", "", `provider every chat response names, as OpenRouter's "provider"`)
	apiKeyEnv := fs.String("api-key-env", "", "environment variable holding the API key to require")
	logRequests := fs.Bool("log-requests", false, "write a line per request received to stderr (method and path), to count what each server was asked")
	tokDir := fs.String("tokenizer", "", "a model directory (tokenizer.json, chat template): count prompts as a server of that model does, so a tokenize stage with the same model agrees (default: sim tokens)")
	f := &cfg.Faults
	fs.Uint64Var(&f.Seed, "fault-seed", 0, "seed of fault decisions")
	fs.Float64Var(&f.Error500, "fail-500", 0, "share of requests answered 500")
	fs.Float64Var(&f.RateLimit, "fail-429", 0, "share of requests answered 429 with Retry-After")
	fs.Float64Var(&f.InFlight402, "fail-402", 0, "share answered 402 in_flight_budget_exhausted with Retry-After")
	fs.Float64Var(&f.Drop, "fail-drop", 0, "share of connections dropped before answering")
	fs.Float64Var(&f.Hang, "fail-hang", 0, "share of requests that hang")
	fs.Float64Var(&f.BadJSON, "fail-json", 0, "share answered with invalid JSON")
	fs.Float64Var(&f.Truncate, "fail-truncate", 0, "share of bodies or streams cut off")
	fs.Float64Var(&f.StreamError, "fail-stream", 0, "share of streams ending in an error event")
	fs.DurationVar(&f.RetryAfter, "retry-after", time.Second, "wait that 429 and 402 ask for")
	fs.DurationVar(&f.HangFor, "hang-for", 0, "how long a hang lasts (0: until the client gives up)")
	fs.BoolVar(&f.HangAll, "hang-all", false, "hang every generation while /health still answers, as a stuck server does")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return &exitError{code: exitUsage, err: errors.New("")}
	}
	if fs.NArg() > 0 {
		return &exitError{code: exitUsage, err: fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	if *apiKeyEnv != "" {
		if cfg.APIKey = env.getenv(*apiKeyEnv); cfg.APIKey == "" {
			return &exitError{code: exitUsage, err: fmt.Errorf("-api-key-env: $%s is empty", *apiKeyEnv)}
		}
	}
	if *tokDir != "" {
		tok, err := tokenizer.Load(*tokDir)
		if err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("-tokenizer: %w", err)}
		}
		if cfg.Template, err = chat.New(tok); err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("-tokenizer %s: %w (counting chat prompts as the model does needs its template: tokenizer_config.json's chat_template or chat_template.jinja)", *tokDir, err)}
		}
		if id, ok := tok.TokenID(tok.Config().EOSToken); ok && mc.EOS == 0 {
			mc.EOS = id
		}
	}
	if *draftDir != "" {
		d, err := sim.ReadDrafter(*draftDir)
		if err != nil {
			return &exitError{code: exitUsage, err: fmt.Errorf("-speculative-draft-model-path: %w", err)}
		}
		cfg.Drafter = d
	}
	cfg.Model = sim.New(mc)
	srv, err := server.New(cfg)
	if err != nil {
		return &exitError{code: exitUsage, err: err}
	}
	defer srv.Close()

	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	var h http.Handler = srv
	if *logRequests {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(env.stderr, "request %s %s\n", r.Method, r.URL.Path)
			srv.ServeHTTP(w, r)
		})
	}
	// inflight counts requests being answered, for the shutdown below.
	var inflight atomic.Int64
	counted := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		inflight.Add(1)
		defer inflight.Add(-1)
		counted.ServeHTTP(w, r)
	})
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(env.stderr, "eaglet sim-server: serving %q on http://%s (/generate, /v1/chat/completions, /v1/completions)\n",
		cfg.Name, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		// Answers in flight get up to 5 s to finish, as http.Server's
		// Shutdown would give them; but Shutdown also takes a connection
		// a client opened and never used as busy for 5 s, and a client
		// with many requests queued opens such connections, so every
		// stop of a launched sim-server would take 5 s. Close once no
		// request is being answered.
		hs.SetKeepAlivesEnabled(false)
		for deadline := time.Now().Add(5 * time.Second); inflight.Load() > 0 && time.Now().Before(deadline); {
			time.Sleep(10 * time.Millisecond)
		}
		hs.Close()
		return nil
	}
}
