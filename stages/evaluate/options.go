// Package evaluate measures what the data bought: it serves prompts to
// speculative-decoding servers (the target with a trained drafter) and
// keeps what each server reports of its drafts in the results table, a
// row per request (per group of requests from vLLM's counters), under the
// identity of what was measured: a rerun with nothing changed sends
// nothing, and reports of acceptance by dataset, turn and context length
// are functions of the table (internal/accept).
package evaluate

import (
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

func init() {
	stages.Register(stages.Define("evaluate", "measure drafters' acceptance on speculative-decoding servers, by dataset, turn and context length", check, newEvaluate))
}

// Options are the `with:` of an evaluate stage.
type Options struct {
	// Drafters are the servers measured, in order: each an endpoint
	// serving the target with a drafter.
	Drafters []Drafter `yaml:"drafters" doc:"required: [{name, endpoint, files}], each an endpoint serving the target with the drafter whose files are in files (its identity is their hash), measured in this order"`
	// Baseline is an endpoint serving the target alone.
	Baseline string `yaml:"baseline" doc:"an endpoint serving the target without a drafter: each drafter's speed-up is measured against it"`
	// Temperatures are the sampling temperatures each prompt is measured at.
	Temperatures []float64 `yaml:"temperatures" default:"[0]" doc:"each prompt is measured at each: 0 gives figures comparable across drafters; add the temperature the drafter will serve at"`
	// MaxTokens caps each answer.
	MaxTokens int `yaml:"max_tokens" default:"512" min:"1" doc:"answer length cap; acceptance is measured over the answer"`
	// Turns chooses the prompts of a record.
	Turns string `yaml:"turns" default:"last" enum:"last|all" doc:"last: the record's prompt (what generate answered); all: every assistant turn of the conversation, from its exact prefix"`
	// Measure chooses how figures are read.
	Measure string `yaml:"measure" default:"auto" enum:"auto|requests|groups" doc:"requests: each answer's meta_info (SGLang); groups: vLLM's /metrics counters read before and after each group; auto: groups when an openai endpoint exports vllm:spec_decode counters, else requests"`
	// Group is how many requests a group measured from counters holds.
	Group int `yaml:"group" default:"8" min:"1" doc:"requests sent together and measured as one from vLLM's counters, of one dataset, turn and context bucket"`
	// Buckets are the context-length bounds of the breakdown.
	Buckets []int `yaml:"buckets" default:"[1000, 2000, 4000, 8000, 16000, 32000]" doc:"context-length bounds in tokens for the breakdown, smallest first"`
	// Tokenizer renders later turns for an endpoint taking token ids.
	Tokenizer string `yaml:"tokenizer" doc:"the target's model directory, to render each turn with its chat template for an endpoint that takes token ids (api: sglang); the first turn uses the tokenize stage's ids"`
	// Out is the JSON file of the figures.
	Out string `yaml:"out" doc:"JSON file of the figures (totals, breakdowns, comparisons), e.g. beside the handoff's manifest"`
	// Overwrite lets the stage replace an out eaglet did not write.
	Overwrite bool `yaml:"overwrite" fp:"-" doc:"replace an out eaglet did not write"`
	// Seed seeds the comparisons' bootstrap.
	Seed int `yaml:"seed" doc:"seed of the comparisons' bootstrap intervals"`
	// Timeout and Retries are as generate's.
	Timeout string `yaml:"timeout" fp:"-" default:"10m" doc:"how long a request may go without an answer"`
	Retries *int   `yaml:"retries" fp:"-" default:"5" doc:"times a retryable failure is tried again"`
}

// Drafter is one server measured: an endpoint serving the target with a
// drafter.
type Drafter struct {
	// Name names the drafter in reports.
	Name string `yaml:"name"`
	// Endpoint is the spec's endpoint serving the target with it.
	Endpoint string `yaml:"endpoint"`
	// Files is the drafter's directory (its config and weights): its
	// identity is their hash, so a retrained drafter is measured anew.
	Files string `yaml:"files"`
}

// EndpointNames names every endpoint the stage sends to, so that the
// servers eaglet launches for them stop with their last user.
func (o *Options) EndpointNames() []string {
	var out []string
	for _, d := range o.Drafters {
		out = append(out, d.Endpoint)
	}
	if o.Baseline != "" {
		out = append(out, o.Baseline)
	}
	return out
}

// WritesMoreFiles names out, checked as every written file is.
func (o *Options) WritesMoreFiles() []stages.WrittenFile {
	if o.Out == "" {
		return nil
	}
	return []stages.WrittenFile{{Option: []string{"out"}, Path: o.Out, Overwrite: o.Overwrite}}
}

func check(spec *specs.Spec, st *specs.Stage, o *Options) error {
	var errs *multierror.Error
	bad := func(keys []string, format string, args ...any) {
		errs = multierror.Append(errs, &specs.Error{Pos: st.OptionPos(keys...), Msg: fmt.Sprintf("stage %s: ", st.Name) + fmt.Sprintf(format, args...)})
	}
	if st.Foreach != "" {
		errs = multierror.Append(errs, &specs.Error{Pos: st.KeyPos("foreach"), Msg: fmt.Sprintf("stage %s: remove `foreach:`; evaluate measures every dataset of its needs in one pass, so that each drafter's server starts once", st.Name)})
	}
	if len(o.Drafters) == 0 {
		bad([]string{"drafters"}, "evaluate needs `drafters:`, e.g. [{name: v1, endpoint: spec-v1, files: out/drafter-v1}]: an endpoint serving the target with each drafter")
	}
	names := map[string]bool{}
	endpoints := map[string]string{}
	for i, d := range o.Drafters {
		at := func(key string) []string {
			if !st.Written("drafters", strconv.Itoa(i), key) {
				return []string{"drafters", strconv.Itoa(i)}
			}
			return []string{"drafters", strconv.Itoa(i), key}
		}
		switch {
		case d.Name == "":
			bad(at("name"), "drafter %d has no name; give each a name for the reports (v1, v2)", i+1)
		case d.Name == "baseline":
			bad(at("name"), "drafter %d is named baseline, the name of the target alone; call it something else", i+1)
		case names[d.Name]:
			bad(at("name"), "two drafters are named %s; give each its own name", d.Name)
		}
		names[d.Name] = true
		checkEndpoint(spec, at("endpoint"), fmt.Sprintf("drafter %s", d.Name), d.Endpoint, bad)
		if prev, dup := endpoints[d.Endpoint]; dup && d.Endpoint != "" {
			bad(at("endpoint"), "drafters %s and %s both name endpoint %s; a server serves one drafter, so give each its own endpoint", prev, d.Name, d.Endpoint)
		}
		endpoints[d.Endpoint] = d.Name
		if d.Files == "" {
			bad(at("files"), "drafter %s needs `files:`, its directory (config and weights): the drafter is known by their hash", d.Name)
		}
	}
	if o.Baseline != "" {
		checkEndpoint(spec, []string{"baseline"}, "baseline", o.Baseline, bad)
		if d, dup := endpoints[o.Baseline]; dup {
			bad([]string{"baseline"}, "baseline %s is drafter %s's endpoint; the baseline serves the target alone", o.Baseline, d)
		}
	}
	if st.Written("temperatures") && len(o.Temperatures) == 0 {
		bad([]string{"temperatures"}, "temperatures is empty; list at least one (0 gives figures comparable across drafters)")
	}
	for _, t := range o.Temperatures {
		if !(t >= 0 && t <= 2) {
			bad([]string{"temperatures"}, "temperature %v is out of range; use 0 to 2", t)
		}
	}
	if st.Written("buckets") && len(o.Buckets) == 0 {
		bad([]string{"buckets"}, "buckets is empty; leave it out for bounds from 1k to 32k tokens")
	}
	for i, b := range o.Buckets {
		if b <= 0 || i > 0 && b <= o.Buckets[i-1] {
			bad([]string{"buckets"}, "buckets %v must rise from above 0; give the bounds in tokens, smallest first", o.Buckets)
			break
		}
	}
	if o.Timeout != "" {
		if d, err := time.ParseDuration(o.Timeout); err != nil || d <= 0 {
			bad([]string{"timeout"}, "timeout %q is not a duration; write 10m or 90s", o.Timeout)
		}
	}
	if o.Retries != nil && *o.Retries < 0 {
		bad([]string{"retries"}, "retries is %d; 0 tries once", *o.Retries)
	}
	if o.Seed < 0 || o.Seed > math.MaxInt32 {
		bad([]string{"seed"}, "seed %d is out of range; use 0 to %d", o.Seed, math.MaxInt32)
	}
	if errs != nil {
		errs.ErrorFormat = specs.FormatErrors
	}
	return errs.ErrorOrNil()
}

// checkEndpoint refuses an endpoint the spec does not declare, or one
// that cannot report speculative decoding.
func checkEndpoint(spec *specs.Spec, at []string, what, name string, bad func([]string, string, ...any)) {
	if name == "" {
		bad(at, "%s needs `endpoint:`, one of the spec's endpoints", what)
		return
	}
	ep := spec.Endpoint(name)
	if ep == nil {
		bad(at, "%s: no endpoint %s in the spec; declare it under `endpoints:`", what, name)
		return
	}
	switch ep.API {
	case "sglang", "openai", "":
		// An endpoint without an api is refused where it is declared.
	default:
		bad(at, "%s: endpoint %s has api %s, which reports no speculative decoding; serve the target with sglang or an openai-compatible server (vLLM, SGLang)", what, name, ep.API)
	}
}
