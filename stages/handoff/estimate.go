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
	HiddenSize int     `json:"hidden_size"`
	Layers     int     `json:"layers"`
	Bytes      int     `json:"bytes_per_value"`
	DiskBytes  int64   `json:"disk_bytes"`
	Seconds    float64 `json:"seconds,omitempty"`
}

// hiddenStates sizes extraction over tokens, from the spec's hidden_states
// and the model's config.json beside the tokenizer; nil when the hidden
// size is unknown.
func (h *Handoff) hiddenStates(tokens int64) *hiddenEst {
	e := &hiddenEst{Layers: 4, Bytes: 2}
	rate := 0.0
	if o := h.opts.HiddenStates; o != nil {
		e.HiddenSize, rate = o.HiddenSize, o.TokensPerSecond
		if o.Layers > 0 {
			e.Layers = o.Layers
		}
		if o.Bytes > 0 {
			e.Bytes = o.Bytes
		}
	}
	if e.HiddenSize == 0 && h.opts.Tokenizer != "" {
		e.HiddenSize = readModelConfig(h.spec.Resolve(h.opts.Tokenizer)).HiddenSize
	}
	if e.HiddenSize == 0 {
		return nil
	}
	e.DiskBytes = tokens * int64(e.HiddenSize) * int64(e.Layers) * int64(e.Bytes)
	if rate > 0 {
		e.Seconds = float64(tokens) / rate
	}
	return e
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
		out.Note += fmt.Sprintf("; hidden states ≈ %s (%d tokens × %d × %d layers × %d bytes)", human.Bytes(e.DiskBytes), tokens, e.HiddenSize, e.Layers, e.Bytes)
		if e.Seconds > 0 {
			out.Note += fmt.Sprintf(", extraction ≈ %s", time.Duration(e.Seconds*float64(time.Second)).Round(time.Second))
		}
	}
	return out, nil
}
