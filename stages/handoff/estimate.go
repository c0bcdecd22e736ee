package handoff

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/eaglet-dev/eaglet/internal/human"
	"github.com/eaglet-dev/eaglet/stages"
)

// hiddenEst is what extraction will write and take, for plan and the manifest.
type hiddenEst struct {
	HiddenSize int    `json:"hidden_size"`
	Layers     int    `json:"layers"`
	DType      string `json:"dtype"`
	Bytes      int    `json:"bytes_per_value"`
	// DiskBytes is at DType; BF16Bytes and FP8Bytes price both, so the
	// choice is made with the figures side by side.
	DiskBytes int64   `json:"disk_bytes"`
	BF16Bytes int64   `json:"bf16_bytes"`
	FP8Bytes  int64   `json:"fp8_bytes"`
	Seconds   float64 `json:"seconds,omitempty"`
}

// fp8ScaleBytes is what speculators' fp8 backend stores beside a token's
// values: hidden_states_scales, one float32 a token over all its layers.
const fp8ScaleBytes = 4

// hiddenStates sizes extraction over tokens, from the spec's hidden_states
// and the model's config.json beside the tokenizer; nil when the hidden
// size is unknown.
func (h *Handoff) hiddenStates(tokens int64) *hiddenEst {
	e := &hiddenEst{Layers: 4, DType: "bf16", Bytes: 2}
	rate := 0.0
	if o := h.opts.HiddenStates; o != nil {
		e.HiddenSize, rate = o.HiddenSize, o.TokensPerSecond
		if o.Layers > 0 {
			e.Layers = o.Layers
		}
		switch {
		case o.Bytes > 0:
			e.DType, e.Bytes = fmt.Sprintf("%d-byte values", o.Bytes), o.Bytes
		case o.DType == "fp8":
			e.DType, e.Bytes = "fp8", 1
		}
	}
	if e.HiddenSize == 0 && h.opts.Tokenizer != "" {
		e.HiddenSize = readModelConfig(h.spec.Resolve(h.opts.Tokenizer)).HiddenSize
	}
	if e.HiddenSize == 0 {
		return nil
	}
	values := tokens * int64(e.HiddenSize) * int64(e.Layers)
	e.BF16Bytes, e.FP8Bytes = 2*values, values+tokens*fp8ScaleBytes
	switch e.DType {
	case "bf16":
		e.DiskBytes = e.BF16Bytes
	case "fp8":
		e.DiskBytes = e.FP8Bytes
	default:
		e.DiskBytes = values * int64(e.Bytes)
	}
	if rate > 0 {
		e.Seconds = float64(tokens) / rate
	}
	return e
}

// note says what the estimate is for plan: the chosen dtype's size and
// how it is counted, and the other one's beside it.
func (e *hiddenEst) note(tokens int64) string {
	s := fmt.Sprintf("hidden states ≈ %s at %s (%d tokens × %d × %d layers × %s",
		human.Bytes(e.DiskBytes), e.DType, tokens, e.HiddenSize, e.Layers, human.Plural(e.Bytes, "byte"))
	switch e.DType {
	case "bf16":
		s += fmt.Sprintf("); %s at fp8 with per-token scales (speculators' fp8 backend)", human.Bytes(e.FP8Bytes))
	case "fp8":
		s += fmt.Sprintf(", + a 4-byte scale a token); %s at bf16", human.Bytes(e.BF16Bytes))
	default:
		s += ")"
	}
	return s
}

// modelConfig is what handoff reads of a model directory's config.json.
type modelConfig struct {
	HiddenSize int `json:"hidden_size"`
	VocabSize  int `json:"vocab_size"`
}

// readModelConfig reads config.json in a model directory, or its
// text_config for multimodal models; zeros when there is none.
func readModelConfig(dir string) modelConfig {
	b, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return modelConfig{}
	}
	var cfg struct {
		modelConfig
		TextConfig modelConfig `json:"text_config"`
	}
	if json.Unmarshal(b, &cfg) != nil {
		return modelConfig{}
	}
	return modelConfig{HiddenSize: max(cfg.HiddenSize, cfg.TextConfig.HiddenSize), VocabSize: max(cfg.VocabSize, cfg.TextConfig.VocabSize)}
}

// Estimate passes the records on as about one row each (more with
// turns: all) and says what extraction would write and take.
func (h *Handoff) Estimate(in stages.Estimate) (stages.Estimate, error) {
	out := in
	tokens := in.PromptTokens + in.CompletionTokens
	out.Note = fmt.Sprintf("writes %s/v-<content>/ in %d shards, format %s", h.opts.Out, h.opts.Shards, h.opts.Format)
	if dv := h.opts.DraftVocab; dv != nil {
		// Its coverage is the dry run's figure, once the rows exist.
		out.Note += fmt.Sprintf(", a draft vocabulary of %d of %d ids", dv.Size, dv.TargetSize)
	}
	if e := h.hiddenStates(tokens); e != nil {
		out.Note += "; " + e.note(tokens)
		if e.Seconds > 0 {
			out.Note += fmt.Sprintf(", extraction ≈ %s", time.Duration(e.Seconds*float64(time.Second)).Round(time.Second))
		}
	}
	return out, nil
}
