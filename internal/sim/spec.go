package sim

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"

	"gopkg.in/yaml.v3"
)

// Drafter is a simulated EAGLE-3 draft model beside the target. It never
// changes an answer, since speculative decoding is lossless; it changes
// how many verify steps produce the answer, and so how fast it comes. That
// is why it is not part of Config, whose settings decide the answers and
// whose printed form is an in-process endpoint's identity.
type Drafter struct {
	// Quality is the chance the target accepts the drafter's first token
	// on an easy prompt, before the prompt's difficulty, the part of the
	// answer, the context length and the temperature move it.
	Quality float64 `yaml:"draft_quality" flag:"draft-quality" doc:"chance, 0 to 1, that the target accepts the drafter's first token on an easy prompt; 0: no drafter (the baseline)"`
	// Tokens is how many tokens the drafter proposes a step.
	Tokens int `yaml:"num_speculative_tokens" flag:"num-speculative-tokens" default:"3" doc:"draft tokens proposed a verify step, as vLLM's num_speculative_tokens and SGLang's --speculative-num-steps with --speculative-eagle-topk 1"`
	// Cost is what drafting one token costs, as a share of a target decode
	// step: a verify step takes 1 + Cost*Tokens decode steps of time.
	Cost float64 `yaml:"draft_cost" flag:"draft-cost" doc:"time to draft one token, as a share of a target decode step (0: free)"`
}

// Flags binds d's fields to flags of fs, as Config.Flags does.
func (d *Drafter) Flags(fs *flag.FlagSet) { bindFlags(fs, d) }

// On reports whether there is a drafter: without one the server is the
// baseline, decoding a token a step.
func (d Drafter) On() bool { return d.Quality > 0 }

// WithDefaults returns d with its defaults filled in for zero fields.
func (d Drafter) WithDefaults() Drafter {
	fillDefaults(&d)
	return d
}

// Check reports a setting out of its range.
func (d Drafter) Check() error {
	d = d.WithDefaults()
	switch {
	case d.Quality < 0 || d.Quality > 1 || math.IsNaN(d.Quality):
		return fmt.Errorf("draft quality %g: want 0 to 1", d.Quality)
	case d.Tokens < 1:
		return fmt.Errorf("speculative tokens %d: want at least 1", d.Tokens)
	case d.Cost < 0 || math.IsNaN(d.Cost):
		return fmt.Errorf("draft cost %g: want 0 or more", d.Cost)
	}
	return nil
}

// Speculation is how one answer was decoded with a drafter, counted as
// SGLang and vLLM count it. The first token comes from the prefill; each
// verify step after it checks the drafter's Tokens guesses, keeps those
// accepted in a row and adds the target's own next token, the last step
// only what the answer still needs, so an answer of n tokens has
// n-1 <= Verify+Accepted <= n.
type Speculation struct {
	// Verify counts verify steps: SGLang's spec_verify_ct, vLLM's
	// spec_decode_num_drafts.
	Verify int
	// Accepted counts accepted draft tokens the answer kept.
	Accepted int
	// Drafted counts proposed draft tokens, Tokens a step.
	Drafted int
	// PerPosition[j] counts the steps that accepted the draft token at
	// position j (vLLM's num_accepted_tokens_per_pos).
	PerPosition []int
	// Histogram[k] counts the steps that accepted k draft tokens
	// (SGLang's spec_accept_histogram).
	Histogram []int
	// Pace is how many times faster than the baseline the answer decodes:
	// its tokens over its decode time in target steps, 1 for the prefill
	// token and 1 + Cost*Tokens a verify step.
	Pace float64
}

// The shape of acceptance: what a drafter trained on short chat turns
// finds hard. A prompt's difficulty takes up to maxDifficulty of the
// chance off; reasoning is harder to guess and a tool call's JSON easier;
// beyond trainedContext tokens the chance falls with the fourth root of
// the context; sampling at temperature 1 or more takes hotPenalty off; and
// each further draft position keeps depthDecay of the chance before it.
const (
	maxDifficulty  = 0.25
	reasoningEase  = 0.9
	toolArgsEase   = 1.15
	trainedContext = 4096
	hotPenalty     = 0.15
	depthDecay     = 0.97
	maxChance      = 0.99
)

// Difficulty is how hard p's answer is to draft, 0 (easy) to 0.25: a
// deterministic function of the prompt and the model's seed, so prompts of
// one kind spread as prompts do.
func (m *Model) Difficulty(p Prompt) float64 {
	r := rng{mix(mix(m.cfg.Seed, p.key()), 4)}
	return maxDifficulty * r.float()
}

// Speculate decodes answer a to prompt p with drafter d at the request's
// temperature, deterministically, so a test recomputes what the server
// reported. Without a drafter it is one token a step at pace 1.
func (m *Model) Speculate(d Drafter, p Prompt, a *Answer, temperature float64) Speculation {
	n := len(a.Tokens)
	if !d.On() || n == 0 {
		return Speculation{Pace: 1}
	}
	d = d.WithDefaults()
	s := Speculation{PerPosition: make([]int, d.Tokens)}
	base := d.Quality * (1 - m.Difficulty(p)) * (1 - hotPenalty*min(max(temperature, 0), 1))
	r := rng{mix(mix(m.cfg.Seed, p.key()), 5)}
	for pos := 1; pos < n; {
		accepted := 0
		for j := range d.Tokens {
			if pos+j >= n || r.float() >= m.chance(base, a, pos+j, j) {
				break
			}
			accepted++
		}
		kept := min(accepted+1, n-pos)
		s.Verify++
		s.Accepted += accepted
		for j := range accepted {
			s.PerPosition[j]++
		}
		for len(s.Histogram) <= accepted {
			s.Histogram = append(s.Histogram, 0)
		}
		s.Histogram[accepted]++
		pos += kept
	}
	s.Drafted = s.Verify * d.Tokens
	s.Pace = float64(n) / (1 + float64(s.Verify)*(1+d.Cost*float64(d.Tokens)))
	return s
}

// chance is the chance that the draft of answer token t, at draft
// position j, is accepted.
func (m *Model) chance(base float64, a *Answer, t, j int) float64 {
	c := base * math.Pow(depthDecay, float64(j))
	switch a.Tokens[t].Part {
	case PartReasoning:
		c *= reasoningEase
	case PartToolArgs:
		c *= toolArgsEase
	}
	if ctx := a.PromptTokens + t; ctx > trainedContext {
		c *= math.Pow(float64(trainedContext)/float64(ctx), 0.25)
	}
	return min(c, maxChance)
}

// DrafterConfig is where a simulated drafter's directory keeps its
// settings: config.json's "eaglet_sim" object, beside whatever else a
// real drafter's config holds, so a test drafter is a directory of files
// like a trained one and is known by their hash.
const DrafterConfig = "config.json"

// ReadDrafter reads the simulated drafter of directory dir.
func ReadDrafter(dir string) (Drafter, error) {
	var cfg struct {
		Sim *Drafter `yaml:"eaglet_sim"`
	}
	b, err := os.ReadFile(filepath.Join(dir, DrafterConfig))
	if err != nil {
		return Drafter{}, fmt.Errorf("drafter %s: %w", dir, err)
	}
	// JSON is YAML, read with Drafter's yaml names.
	if err := yaml.Unmarshal(b, &cfg); err != nil {
		return Drafter{}, fmt.Errorf("drafter %s: %s: %w", dir, DrafterConfig, err)
	}
	if cfg.Sim == nil || !cfg.Sim.On() {
		return Drafter{}, fmt.Errorf("drafter %s: %s has no \"eaglet_sim\": {\"draft_quality\": ...} above 0", dir, DrafterConfig)
	}
	d := cfg.Sim.WithDefaults()
	return d, d.Check()
}
