package generate

import (
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages/serving/endpoint"
)

// check validates a generate stage's options, every problem at once, and
// fills in what they leave to the spec: the only endpoint, and the
// tokenize stage's chat template settings.
func check(spec *specs.Spec, st *specs.Stage, opts *Options) error {
	var names []string
	for _, e := range spec.Endpoints {
		names = append(names, e.Name)
	}
	switch {
	case opts.Endpoint == "" && len(names) == 1:
		opts.Endpoint = names[0]
	case opts.Endpoint == "":
		return &specs.Error{Pos: st.Pos, Msg: fmt.Sprintf("stage %s: generate needs `endpoint:` (one of %v)", st.Name, names)}
	case spec.Endpoint(opts.Endpoint) == nil:
		return &specs.Error{Pos: st.OptionPos("endpoint"), Msg: fmt.Sprintf("stage %s: unknown endpoint %q%s; endpoints: %v", st.Name, opts.Endpoint, specs.Suggest(opts.Endpoint, names), names)}
	}
	ep := spec.Endpoint(opts.Endpoint)
	// Every problem of the stage is reported at once.
	var errs *multierror.Error
	bad := func(pos specs.Pos, format string, args ...any) {
		errs = multierror.Append(errs, &specs.Error{Pos: pos, Msg: fmt.Sprintf("stage %s: ", st.Name) + fmt.Sprintf(format, args...)})
	}
	if opts.Timeout != "" {
		if d, err := time.ParseDuration(opts.Timeout); err != nil || d <= 0 {
			bad(st.OptionPos("timeout"), "timeout %q is not a positive duration like 90s or 10m", opts.Timeout)
		}
	}
	if opts.Retries != nil && *opts.Retries < 0 {
		bad(st.OptionPos("retries"), "retries is %d; use 0 or more", *opts.Retries)
	}
	// Servers reject these anyway, but only once the run is under way,
	// and a temperature of 7 would be answered with noise where they do not.
	if t := opts.Temperature; t != nil && (*t < 0 || *t > 2) {
		bad(st.OptionPos("temperature"), "temperature is %v; use 0 to 2", *t)
	}
	if p := opts.TopP; p != nil && (*p <= 0 || *p > 1) {
		bad(st.OptionPos("top_p"), "top_p is %v; use more than 0, at most 1", *p)
	}
	if k := opts.TopK; k != nil && *k < 1 && *k != -1 {
		bad(st.OptionPos("top_k"), "top_k is %d; use 1 or more, or -1 for no limit", *k)
	}
	if opts.ToolTurns == "regenerate" && opts.Turns != "all" {
		bad(st.OptionPos("tool_turns"), "tool_turns: regenerate answers the source's tool-call turns among every assistant turn; it needs turns: all")
	}
	if b := opts.Budget; b != nil {
		if b.Tolerance != nil && (*b.Tolerance < 0 || *b.Tolerance > 1) {
			bad(st.OptionPos("budget", "tolerance"), "budget tolerance is %v; use a fraction of the limit from 0 to 1 (0.01 accepts 1%% over)", *b.Tolerance)
		}
		if b.CompletionTokens.IsZero() && b.TotalTokens.IsZero() && b.Samples.IsZero() && b.Dollars.IsZero() {
			bad(st.OptionPos("budget"), "budget needs at least one of completion_tokens, total_tokens, samples, dollars")
		}
		if !b.Dollars.IsZero() && ep.Price == nil {
			bad(st.OptionPos("budget", "dollars"), "a dollars budget needs `price:` on endpoint %s", opts.Endpoint)
		}
	}
	if tg := opts.Target; tg != nil {
		if tg.Accepted.IsZero() {
			bad(st.OptionPos("target"), "target needs `accepted:` (the number of answers the filters after generate must accept)")
		}
		if a := tg.EstAcceptance; a != nil && (*a <= 0 || *a > 1) {
			bad(st.OptionPos("target", "est_acceptance"), "est_acceptance is %v; use the share of answers expected to pass the filters, above 0 and at most 1", *a)
		}
	}
	if _, ok := specs.LookupAPI(ep.API); !ok {
		return errs.ErrorOrNil() // the API is reported by the spec's own checks
	}
	e, err := endpoint.New(spec, ep, nil)
	if err != nil {
		var se *specs.Error
		var me *multierror.Error
		if !errors.As(err, &se) && !errors.As(err, &me) {
			err = &specs.Error{Pos: ep.Pos, Msg: err.Error()}
		}
		errs = multierror.Append(errs, err) // positioned inside the endpoint's options
	} else {
		if opts.Turns == "all" && opts.Tokenizer == "" && e.TakesIDs {
			bad(st.OptionPos("turns"), "turns: all on endpoint %s, which takes token ids, needs `tokenizer:` on the stage to render each turn", ep.Name)
		}
		if err := inheritTemplate(spec, st, opts, e); err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	if opts.Date != "" {
		if _, err := chat.ParseDate(opts.Date); err != nil {
			bad(st.OptionPos("date"), "%v", err)
		}
	}
	return errs.ErrorOrNil()
}
