// Package handoff is the stage that hands the regenerated data to a
// trainer's hidden-state extraction: one row per assistant turn the target
// generated, token-exact where the trainer reads ids, written as shards of
// a content-addressed version with a manifest and a data card.
package handoff

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/hashicorp/go-multierror"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/draftvocab"
	"github.com/eaglet-dev/eaglet/internal/launch"
	"github.com/eaglet-dev/eaglet/internal/outfile"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
	"github.com/eaglet-dev/eaglet/internal/tokenizer/chat"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

func init() {
	stages.Register(stages.Define("handoff",
		"write trainer-ready shards (speculators ids and masks, SpecForge conversations or text) with a manifest",
		check, newHandoff))
}

// Formats a handoff writes.
const (
	FormatSpeculators   = "speculators"
	FormatSpecForge     = "specforge"
	FormatSpecForgeText = "specforge-text"
	FormatMessages      = "messages"
)

// Options of handoff.
type Options struct {
	// Out is the directory the versions are written under, relative to the spec.
	Out string `yaml:"out" doc:"a directory, required"`
	// Format is speculators (input_ids and loss_mask), specforge
	// (conversations), specforge-text (the rendered text) or messages
	// (OpenAI-shaped conversations).
	Format string `yaml:"format" default:"speculators" enum:"speculators|specforge|specforge-text|messages" doc:"what a row holds: ids and loss mask, SpecForge's conversations or text, or OpenAI messages"`
	// Shards splits the rows into this many files balanced by tokens.
	Shards int `yaml:"shards" default:"1" doc:"files, balanced by tokens (at most 1024)"`
	// ShuffleSeed orders rows before they are dealt to shards.
	ShuffleSeed int `yaml:"shuffle_seed" doc:"orders rows before they are dealt to shards"`
	// MaxLength is the trainer's window in tokens (0: no limit); rows
	// longer are dropped or clipped as OnOverflow says.
	MaxLength int `yaml:"max_length" doc:"the trainer's window in tokens"`
	// OnOverflow is drop or clip.
	OnOverflow string `yaml:"on_overflow" default:"drop" enum:"drop|clip" doc:"what becomes of a row longer than max_length"`
	// ToolTurns says what becomes of rows whose context holds tool calls
	// the source wrote: context (kept unsupervised) or drop.
	ToolTurns string `yaml:"tool_turns" default:"context" enum:"context (source-written tool calls stay as unsupervised context)|drop" doc:"context: tool calls the source wrote stay unsupervised context; drop: rows with such context are dropped"`
	// Tokenizer is the target's model directory; it defaults to the
	// tokenize stage's the handoff reads from. Chat template, its kwargs
	// and date default to that stage's too.
	Tokenizer          string         `yaml:"tokenizer" doc:"default: the tokenize stage's upstream"`
	ChatTemplate       string         `yaml:"chat_template" doc:"default: the tokenize stage's upstream"`
	ChatTemplateKwargs map[string]any `yaml:"chat_template_kwargs" doc:"default: the tokenize stage's upstream"`
	Date               string         `yaml:"date" doc:"default: the tokenize stage's upstream"`
	// HiddenStates sizes what extraction will write, for plan.
	HiddenStates *HiddenStates `yaml:"hidden_states" fp:"-" doc:"{hidden_size, layers, dtype, bytes, tokens_per_second}: for plan's disk and time; hidden_size defaults to the model's config.json"`
	// DraftVocab writes the drafter's reduced vocabulary beside the
	// manifest (see vocab.go).
	DraftVocab *DraftVocab `yaml:"draft_vocab" doc:"{size, target_size}: write d2t.npy, t2d.npy and token_freq.json for a draft vocabulary of the size most supervised ids; target_size defaults to the model's config.json vocab_size"`
	// Run launches hidden-state extraction per shard once a version is
	// written (see internal/launch).
	Run *launch.Options `yaml:"run" doc:"launch hidden-state extraction per shard once a version is written"`
	// Overwrite lets the handoff write into an out directory eaglet did
	// not make (it never deletes anything there).
	Overwrite bool `yaml:"overwrite" fp:"-" doc:"replace an out eaglet did not write"`
}

// HiddenStates describes the target's captured hidden states, for plan's
// disk and time estimate; unset fields come from the model's config.json
// in the tokenizer directory.
type HiddenStates struct {
	HiddenSize int `yaml:"hidden_size"`
	// Layers is how many layers are captured per token (EAGLE-3: three
	// auxiliary layers and the last one; default 4).
	Layers int `yaml:"layers"`
	// DType is what extraction stores: bf16 (the default; SpecForge and
	// speculators' file backend) or fp8 (speculators' fp8 backend:
	// float8_e4m3fn values and one fp32 scale a token).
	DType string `yaml:"dtype" enum:"bf16|fp8"`
	// Bytes per value, for another dtype (4 for fp32); it replaces dtype's.
	Bytes int `yaml:"bytes"`
	// TokensPerSecond is the extraction rate, for the time estimate.
	TokensPerSecond float64 `yaml:"tokens_per_second"`
}

var _ stages.FileWriter = (*Options)(nil)

// WritesFile names out, so that no other stage writes there, it stays
// inside the spec's directory, and a directory eaglet did not make is left
// alone unless overwrite is set.
func (o *Options) WritesFile() (option, path string, overwrite bool) {
	return "out", o.Out, o.Overwrite
}

// tokenizeOptions is what handoff reads of the tokenize stage upstream.
type tokenizeOptions struct {
	Tokenizer          string         `yaml:"tokenizer"`
	ChatTemplate       string         `yaml:"chat_template"`
	ChatTemplateKwargs map[string]any `yaml:"chat_template_kwargs"`
	Date               string         `yaml:"date"`
}

// inherit fills in the template settings from the tokenize stage upstream.
func inherit(spec *specs.Spec, st *specs.Stage, o *Options) {
	up := spec.Upstream(st, "tokenize")
	if up == nil || o.Tokenizer != "" {
		return
	}
	var theirs tokenizeOptions
	// The tokenize stage reports its own options' errors.
	_ = spec.Decode(up.With, &theirs)
	o.Tokenizer, o.ChatTemplate = theirs.Tokenizer, theirs.ChatTemplate
	if o.ChatTemplateKwargs == nil {
		o.ChatTemplateKwargs = theirs.ChatTemplateKwargs
	}
	if o.Date == "" {
		o.Date = theirs.Date
	}
}

// MaxShards is the most shards a handoff writes: each is a file open at
// once with its buffer, so 1,024 hold 256 MiB and a file descriptor each,
// far more than any trainer's ranks read.
const MaxShards = 1024

func check(spec *specs.Spec, st *specs.Stage, opts *Options) error {
	var errs *multierror.Error
	bad := func(pos specs.Pos, format string, args ...any) {
		errs = multierror.Append(errs, &specs.Error{Pos: pos, Msg: fmt.Sprintf("stage %s: ", st.Name) + fmt.Sprintf(format, args...)})
	}
	if st.Foreach != "" {
		bad(st.KeyPos("foreach"), "remove `foreach:`; handoff writes one versioned directory from every dataset it needs, which per-dataset instances would each replace")
	}
	if opts.Out == "" {
		bad(st.OptionPos("out"), "handoff needs `out:` (the directory its versions are written under)")
	}
	switch n := specs.WithDefaults(opts, st.With).Shards; {
	case n < 1:
		bad(st.OptionPos("shards"), "shards is %d; use 1 or more", n)
	case n > MaxShards:
		bad(st.OptionPos("shards"), "shards is %d; use at most %d: every shard is a file held open, with a %d KiB buffer, while a version is written", n, MaxShards, shardBuffer>>10)
	}
	if opts.MaxLength < 0 {
		bad(st.OptionPos("max_length"), "max_length is %d; use 0 (no limit) or more", opts.MaxLength)
	}
	if h := opts.HiddenStates; h != nil {
		// A size written is the size used: one of 0 would not fall back
		// to config.json or the usual layers and bytes.
		for _, size := range []struct {
			key string
			v   float64
		}{{"hidden_size", float64(h.HiddenSize)}, {"layers", float64(h.Layers)}, {"bytes", float64(h.Bytes)}, {"tokens_per_second", h.TokensPerSecond}} {
			if size.v < 0 || size.v == 0 && st.Written("hidden_states", size.key) {
				bad(st.OptionPos("hidden_states", size.key), "hidden_states %s is %v; sizes must be positive (leave the key out for the usual one)", size.key, size.v)
			}
		}
		if h.DType != "" && h.Bytes > 0 {
			bad(st.OptionPos("hidden_states", "bytes"), "hidden_states has both dtype (%s) and bytes (%d); keep one: bytes is for a dtype other than bf16 and fp8", h.DType, h.Bytes)
		}
		if h.DType == "fp8" && (opts.Format == FormatSpecForge || opts.Format == FormatSpecForgeText) {
			bad(st.OptionPos("hidden_states", "dtype"), "hidden_states dtype is fp8, but SpecForge's extraction stores bf16; use dtype: bf16, or format: speculators with its fp8 hidden-states backend")
		}
	}
	if opts.Run != nil {
		if err := opts.Run.Check(spec, st, "run"); err != nil {
			errs = multierror.Append(errs, err)
		}
	}
	inherit(spec, st, opts)
	// The format is fingerprinted as it runs, defaulted: it decides every
	// file written, and stores made before defaults were declared by tag
	// hold it so.
	opts.Format = specs.WithDefaults(opts, st.With).Format
	format := opts.Format
	needsIDs := format == FormatSpeculators || format == FormatSpecForgeText
	if needsIDs && opts.Tokenizer == "" {
		bad(st.Pos, "format %s needs the target's tokenizer and chat template: add a tokenize stage upstream, or `tokenizer:` (the target's model directory) to the handoff", format)
	}
	if opts.Tokenizer != "" {
		for _, f := range []struct{ key, path string }{{"tokenizer", opts.Tokenizer}, {"chat_template", opts.ChatTemplate}} {
			if f.path == "" {
				continue
			}
			if _, err := os.Stat(spec.Resolve(f.path)); err != nil {
				bad(st.OptionPos(f.key), "%s: %v", f.key, err)
			}
		}
	}
	if opts.Date != "" {
		if _, err := chat.ParseDate(opts.Date); err != nil {
			bad(st.OptionPos("date"), "%v", err)
		}
	}
	checkDraftVocab(spec, st, opts, bad)
	return errs.ErrorOrNil()
}

// Handoff writes the trainer's shards.
type Handoff struct {
	opts  *Options
	spec  *specs.Spec
	inst  *stages.Instance
	out   string
	tmpl  *chat.Template
	paths []string // tokenizer and template files, for identity
	// load makes tmpl, loading the tokenizer, once the stage runs
	// (Start); nil without a tokenizer.
	load     func() error
	loadOnce sync.Once
	loadErr  error
	// manifestPath and stamp name what Finish wrote, for Report; flagged
	// counts its rows that are not exactly what the server read and wrote.
	manifestPath, stamp string
	flagged             map[string]int
	// runDrops are the records this run's Run dropped, which Finish
	// never sees but the manifest accounts for.
	runDrops []drop
	genOnce  sync.Once
	gen      genInfo
	// vocab is the draft vocabulary of the rows Run kept, then of those
	// Finish wrote, for Report.
	vocab *vocabInfo
	// warnings are the manifest's, for Report.
	warnings []string
}

var (
	_ stages.Batch         = (*Handoff)(nil)
	_ stages.Orderer       = (*Handoff)(nil)
	_ stages.Finisher      = (*Handoff)(nil)
	_ stages.Fingerprinter = (*Handoff)(nil)
	_ stages.Estimator     = (*Handoff)(nil)
	_ stages.Starter       = (*Handoff)(nil)
)

func newHandoff(inst *stages.Instance, o *Options) (stages.Stage, error) {
	h := &Handoff{opts: o, spec: inst.Spec, inst: inst, out: inst.Spec.Resolve(o.Out)}
	if o.Tokenizer == "" {
		return h, nil
	}
	dir := inst.Spec.Resolve(o.Tokenizer)
	h.paths = []string{dir}
	tpl := ""
	if o.ChatTemplate != "" {
		tpl = inst.Spec.Resolve(o.ChatTemplate)
		h.paths = append(h.paths, tpl)
	}
	h.load = func() error {
		tok, err := inst.Shared.Tokenizer(dir)
		if err != nil {
			return err
		}
		src := ""
		if tpl != "" {
			b, err := os.ReadFile(tpl)
			if err != nil {
				return err
			}
			src = string(b)
		}
		if h.tmpl, err = chat.Pinned(tok, src, o.Date, o.ChatTemplateKwargs, inst.Shared.Now); err != nil {
			return &specs.Error{Pos: inst.Stage.Pos, Msg: fmt.Sprintf("stage %s: tokenizer %s: %v", inst.Stage.Name, dir, err)}
		}
		return nil
	}
	return h, nil
}

// Start loads the tokenizer and makes the template, once; the engine
// calls it before the stage runs, and Run and Finish do if none did.
func (h *Handoff) Start() error {
	if h.load != nil {
		h.loadOnce.Do(func() { h.loadErr = h.load() })
	}
	return h.loadErr
}

// Fingerprint names the tokenizer and template, and the sampling, endpoint
// and model of the generate stage upstream: other ones make other rows,
// since each row's metadata says how it was generated, and a changed
// temperature whose answers came back the same (greedy decoding, a
// deterministic server) must still rewrite it.
func (h *Handoff) Fingerprint() (string, error) {
	var fp struct {
		Tokenizer string `json:"tokenizer,omitempty"`
		genInfo
	}
	if len(h.paths) > 0 {
		var err error
		if fp.Tokenizer, err = tokenizer.FilesHash(h.paths...); err != nil {
			return "", err
		}
	}
	fp.genInfo = h.generation()
	b, err := json.Marshal(fp)
	return string(b), err
}

// Run keeps every record that yields at least one row the trainer can
// use, judging each turn as Finish will (its ids made and fitted to the
// window), so plan shows what the trainer's window costs before anything
// is written.
func (h *Handoff) Run(ctx context.Context, in stages.Input, out stages.Output) error {
	if err := h.Start(); err != nil {
		return err
	}
	h.runDrops, h.vocab = nil, nil
	// With a draft vocabulary every turn is judged, not only up to the
	// first row of a record, so that plan knows the coverage Finish will
	// write.
	var counts draftvocab.Counts
	if h.opts.DraftVocab != nil {
		counts = draftvocab.Counts{}
	}
	err := in.Each(ctx, func(rec *conv.Record) error {
		turns := answers(rec)
		reason, kept := "no answer of the target", false
		for _, t := range turns {
			tk, r, err := h.judge(rec, t)
			if err != nil {
				return fmt.Errorf("record %s (%s): %w", rec.Key, rec.Dataset, err)
			}
			if r != "" {
				reason = r
				continue
			}
			kept = true
			if counts == nil {
				break
			}
			counts.Add(tk.ids, tk.mask)
		}
		if kept {
			return out.Keep(rec)
		}
		out.Drop(reason)
		h.runDrops = append(h.runDrops, drop{rec.Dataset, reason, len(turns)})
		return nil
	})
	if err != nil || counts == nil {
		return err
	}
	_, h.vocab, err = buildVocab(h.opts.DraftVocab, counts)
	return err
}

// firstLine is s up to its first newline.
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// drop is a record Run did not pass on, for Finish's accounting.
type drop struct {
	dataset, reason string
	turns           int
}

// judge makes a turn's ids (nil without a tokenizer) and fits them to
// the trainer's window; a reason says why the turn gives no row.
func (h *Handoff) judge(rec *conv.Record, t answer) (*tokens, string, error) {
	if h.opts.ToolTurns == "drop" && sourceToolCalls(rec, t) {
		return nil, "tool_turns: drop (source-written tool calls in context)", nil
	}
	// Judged here, not when the row is written, so that Run drops the
	// record (its count and reason in status and the report) when no turn
	// of it can be a SpecForge row, and no turn is tokenized for nothing.
	if h.opts.Format == FormatSpecForge {
		if reason := specForgeInvalid(conv.ToOpenAI(t.conversation())); reason != "" {
			return nil, "specforge validator: " + reason, nil
		}
	}
	max := h.opts.MaxLength
	if h.tmpl == nil {
		// Without the target's tokenizer the server's counts are the length.
		switch n := t.promptTokens + t.completionTokens; {
		case max > 0 && t.promptTokens >= max:
			return nil, fmt.Sprintf("context fills max_length (%d)", max), nil
		case max > 0 && n > max && h.opts.OnOverflow != "clip":
			return nil, fmt.Sprintf("over max_length (%d)", max), nil
		}
		return nil, "", nil
	}
	tk, err := encode(h.tmpl, rec.Tools, t)
	if errors.Is(err, errUnaligned) {
		return nil, "template not prefix-stable at this turn", nil
	}
	var te *chat.TemplateError
	if errors.As(err, &te) {
		// The template refuses this conversation (gpt-oss raises on an
		// answer with content, reasoning and tool calls at once): the turn
		// costs only itself, counted by the template's reason.
		return nil, "chat template refuses the turn: " + firstLine(te.Err.Error()), nil
	}
	if err != nil {
		return nil, "", err
	}
	full := len(tk.ids)
	switch {
	case max > 0 && full > max && h.opts.OnOverflow != "clip":
		return tk, fmt.Sprintf("over max_length (%d)", max), nil
	case !clip(tk, max) && full > max:
		return tk, fmt.Sprintf("context fills max_length (%d)", max), nil
	case tk.supervised == 0:
		return tk, "no supervised tokens", nil
	}
	return tk, "", nil
}

// Order deals rows to shards in a seeded order, so each shard is a fair
// sample of the mixture.
func (h *Handoff) Order(rec *conv.Record) uint64 {
	return stages.SeededHash(h.opts.ShuffleSeed, "handoff", rec.Key)>>1 | 1
}

// Finish writes the version and points `current` at it.
func (h *Handoff) Finish(ctx context.Context, out stages.Input) error {
	if err := h.Start(); err != nil {
		return err
	}
	v, err := h.write(ctx, out)
	if err != nil {
		return fmt.Errorf("handoff %s: %w", h.out, err)
	}
	h.manifestPath = filepath.Join(v.dir, "manifest.json")
	h.stamp, err = outfile.Stamp(h.manifestPath)
	if err != nil {
		return err
	}
	h.inst.Log("wrote %s: %d rows, %d tokens (%d supervised) in %d shards%s", v.rel, v.rows, v.tokens, v.supervised, len(v.shards), v.reused)
	m := v.manifest
	if h.vocab = m.DraftVocab; h.vocab != nil {
		h.inst.Log("draft vocabulary: %s", h.vocab)
	}
	h.flagged = nil
	for reason, n := range map[string]int{
		"context another length than the server counted":          m.PromptCheck[promptMismatch],
		"answer tokenized from text (the server returned no ids)": m.IDsFrom[fromTokenized],
	} {
		if n > 0 {
			if h.flagged == nil {
				h.flagged = map[string]int{}
			}
			h.flagged[reason] = n
		}
	}
	if n := m.PromptCheck[promptMismatch]; n > 0 {
		h.inst.Log("warning: %d of %d rows' context is another length than the server counted (each row's metadata has context_tokens beside usage.prompt_tokens): the handoff's tokenizer, chat template or its kwargs differ from the server's", n, v.rows)
	}
	if n := m.IDsFrom[fromTokenized]; n > 0 {
		h.inst.Log("warning: %d of %d rows' answers are their text tokenized, not the ids the target wrote (the server returned none; vLLM and SGLang return them with the endpoint's return_token_ids: true)", n, v.rows)
	}
	h.warnings = m.Warnings
	for _, w := range m.Warnings {
		h.inst.Log("warning: %s", w)
	}
	if n := m.ServerIDsDisagree; n > 0 {
		h.inst.Log("warning: %d rows' output ids from the server do not decode to the answer's text with tokenizer %s: is it the target's?", n, h.opts.Tokenizer)
	}
	if h.opts.Run == nil {
		return nil
	}
	return h.launch(ctx, v)
}

// launch starts extraction on every shard of v that has not been through
// it, as internal/launch decides from its checkpoints. A first Ctrl-C
// stops launching (running commands are then waited for or stopped as
// on_interrupt says); a failed shard fails the stage, so the next run
// launches it again.
func (h *Handoff) launch(ctx context.Context, v *version) error {
	if h.inst.Checkpoints == nil {
		return fmt.Errorf("handoff %s: no state store to checkpoint launches in", h.inst.ID)
	}
	job := &launch.Job{Instance: h.inst.ID, Options: h.opts.Run, Out: v.dir, Manifest: filepath.Join(v.dir, "manifest.json"),
		LogDir: filepath.Join(h.out, "logs"), Dir: filepath.Dir(h.spec.Path), Redact: h.spec.Redact, Log: h.inst.Log, Force: h.inst.Force}
	for i, s := range v.shards {
		job.Shards = append(job.Shards, launch.Shard{Index: i, Path: filepath.Join(v.dir, filepath.FromSlash(s.Path)), Version: s.SHA256[:16], Tokens: s.Tokens})
	}
	lctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-stages.StopChan(ctx):
			cancel()
		case <-lctx.Done():
		}
	}()
	statuses, err := launch.Run(lctx, h.inst.Checkpoints, job)
	launched, current := 0, 0
	for _, st := range statuses {
		if st.Launch {
			launched++
		} else if st.Reason == "" {
			current++
		}
	}
	h.inst.Log("extraction: %d of %d shards launched, %d already done", launched, len(statuses), current)
	return err
}

// Report names the manifest, so a deleted version is written again,
// counts the rows that are not exactly what the server read and wrote, so
// status and the summary say so beside the log's warnings, and says what
// the draft vocabulary covers (in plan too, from the dry run's Run).
func (h *Handoff) Report(s *stages.Report) {
	if h.stamp != "" {
		s.Output, s.OutputHash = h.manifestPath, h.stamp
	}
	s.Flagged = h.flagged
	if h.vocab != nil {
		s.Figures = append(s.Figures, "draft vocabulary: "+h.vocab.String())
	}
	for _, w := range h.warnings {
		s.Figures = append(s.Figures, "warning: "+w)
	}
}
