package handoff

import (
	"encoding/json"
	"fmt"
	"math/bits"
	"runtime/debug"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/tokenizer"
)

// Manifest describes a version: what it holds, where it came from and
// what became of every record, for the trainer and for the person who
// finds the directory a month later.
type Manifest struct {
	Version          string                   `json:"version"`
	Format           string                   `json:"format"`
	CreatedAt        time.Time                `json:"created_at"`
	Eaglet           string                   `json:"eaglet"`
	Spec             string                   `json:"spec"`
	Stage            string                   `json:"stage"`
	Rows             int                      `json:"rows"`
	Tokens           int64                    `json:"tokens"`
	SupervisedTokens int64                    `json:"supervised_tokens"`
	MaxLength        int                      `json:"max_length,omitempty"`
	OnOverflow       string                   `json:"on_overflow,omitempty"`
	Shards           []shardFile              `json:"shards"`
	Datasets         map[string]*DatasetCount `json:"datasets"`
	// IDsFrom counts rows by where their answer ids came from, and
	// PromptCheck by how their context ids were checked.
	IDsFrom     map[string]int `json:"ids_from,omitempty"`
	PromptCheck map[string]int `json:"prompt_check,omitempty"`
	// ServerIDsDisagree counts rows whose server output ids do not decode
	// to the answer's text with this tokenizer: another tokenizer than
	// the target's (or a simulated server's ids).
	ServerIDsDisagree int        `json:"server_ids_disagree,omitempty"`
	Tokenizer         *Identity  `json:"tokenizer,omitempty"`
	Generation        genInfo    `json:"generation"`
	HiddenState       *hiddenEst `json:"hidden_states,omitempty"`
	DraftVocab        *vocabInfo `json:"draft_vocab,omitempty"`
	// Serving counts rows by the serving stack that made their answer,
	// most first; Warnings are what the stage warned of, for whoever
	// finds the version later.
	Serving  []servingCount `json:"serving,omitempty"`
	Warnings []string       `json:"warnings,omitempty"`
	// served counts rows by stack while rows are written.
	served map[conv.Served]int
}

// servingCount is one serving stack and the rows it answered; a stack
// with no field set is answers recorded without one (made before eaglet
// recorded stacks, or in process).
type servingCount struct {
	conv.Served
	Rows int `json:"rows"`
}

// countServed counts a row answered by stack s (nil: not recorded).
func (m *Manifest) countServed(s *conv.Served) {
	if m.served == nil {
		m.served = map[conv.Served]int{}
	}
	var k conv.Served
	if s != nil {
		k = *s
	}
	m.served[k]++
}

// settleServing lists the stacks, most rows first, and warns when the
// answers came from more than one: a drafter learns the stack it is
// trained on (a quantised target's outputs are not the bf16 one's), so a
// mix is worth knowing before hours of extraction.
func (m *Manifest) settleServing() {
	m.Serving = nil
	for s, n := range m.served {
		m.Serving = append(m.Serving, servingCount{Served: s, Rows: n})
	}
	slices.SortFunc(m.Serving, func(a, b servingCount) int {
		if a.Rows != b.Rows {
			return b.Rows - a.Rows
		}
		return strings.Compare(a.label(), b.label())
	})
	var known []string
	for _, s := range m.Serving {
		if s.Served != (conv.Served{}) {
			known = append(known, fmt.Sprintf("%s (%d rows)", s.label(), s.Rows))
		}
	}
	if len(known) > 1 {
		m.Warnings = append(m.Warnings, fmt.Sprintf("the answers came from %d serving stacks: %s; a drafter learns the stack it is trained on, "+
			"so train it on the one it will serve behind (pin the provider or the servers, and regenerate the others)", len(known), strings.Join(known, "; ")))
	}
}

func (s servingCount) label() string {
	if s.Served == (conv.Served{}) {
		return "not recorded"
	}
	return s.Served.String()
}

// Identity names the tokenizer and chat template the ids were made with.
type Identity struct {
	Path               string         `json:"path"`
	FilesSHA           string         `json:"files_sha256"`
	ChatTemplateSHA    string         `json:"chat_template_sha256"`
	ChatTemplateKwargs map[string]any `json:"chat_template_kwargs,omitempty"`
	Date               string         `json:"date,omitempty"`
}

// DatasetCount is one dataset's accounting: records in, turns answered,
// rows out, and turns dropped by reason (turns = rows + dropped).
type DatasetCount struct {
	Records          int            `json:"records"`
	Turns            int            `json:"turns"`
	Rows             int            `json:"rows"`
	Dropped          map[string]int `json:"dropped,omitempty"`
	Tokens           int64          `json:"tokens"`
	SupervisedTokens int64          `json:"supervised_tokens"`
	// Lengths is a histogram of row lengths in tokens by powers of two:
	// {"le": 1024, "rows": 16} counts rows of 513 to 1024 tokens.
	Lengths []bucket `json:"lengths"`
}

type bucket struct {
	LE   int `json:"le"`
	Rows int `json:"rows"`
}

// addLength counts a row of n tokens in its power-of-two bucket.
func (d *DatasetCount) addLength(n int) {
	top := 1 << bits.Len(uint(max(n-1, 0)))
	i := sort.Search(len(d.Lengths), func(i int) bool { return d.Lengths[i].LE >= top })
	if i == len(d.Lengths) || d.Lengths[i].LE != top {
		d.Lengths = slices.Insert(d.Lengths, i, bucket{LE: top})
	}
	d.Lengths[i].Rows++
}

func (d *DatasetCount) drop(reason string) { d.Dropped = addCount(d.Dropped, reason, 1) }

func addCount(m map[string]int, key string, n int) map[string]int {
	if m == nil {
		m = map[string]int{}
	}
	m[key] += n
	return m
}

type genInfo struct {
	Endpoint string         `json:"endpoint,omitempty"`
	API      string         `json:"api,omitempty"`
	Model    string         `json:"model,omitempty"`
	Sampling map[string]any `json:"sampling,omitempty"`
	sampling map[string]any
	endpoint string
}

func (h *Handoff) newManifest() *Manifest {
	m := &Manifest{Format: h.opts.Format, CreatedAt: h.inst.Shared.Now().UTC(), Eaglet: eagletVersion(), Spec: h.spec.Name,
		Stage: h.inst.ID, MaxLength: h.opts.MaxLength, Datasets: map[string]*DatasetCount{}, Generation: h.generation()}
	if h.opts.MaxLength > 0 {
		m.OnOverflow = h.opts.OnOverflow
	}
	if h.tmpl != nil {
		// The files' hash alone: the fingerprint also names the generation.
		sha, _ := tokenizer.FilesHash(h.paths...)
		m.Tokenizer = &Identity{Path: h.opts.Tokenizer, FilesSHA: sha, ChatTemplateSHA: h.tmpl.Hash(),
			ChatTemplateKwargs: h.opts.ChatTemplateKwargs, Date: h.opts.Date}
	}
	return m
}

func (m *Manifest) dataset(name string) *DatasetCount {
	d := m.Datasets[name]
	if d == nil {
		d = &DatasetCount{}
		m.Datasets[name] = d
	}
	return d
}

func (m *Manifest) count(tk *tokens) {
	if m.IDsFrom == nil {
		m.IDsFrom, m.PromptCheck = map[string]int{}, map[string]int{}
	}
	m.IDsFrom[tk.from]++
	m.PromptCheck[tk.check]++
	if tk.from == fromServer && !tk.idsAgree {
		m.ServerIDsDisagree++
	}
}

// generation reads the sampling settings and endpoint of the generate
// stage upstream from the spec, once.
func (h *Handoff) generation() genInfo {
	h.genOnce.Do(func() {
		up := h.spec.Upstream(h.inst.Stage, "generate")
		if up == nil {
			return
		}
		var theirs struct {
			Endpoint    string   `yaml:"endpoint"`
			Temperature *float64 `yaml:"temperature"`
			TopP        *float64 `yaml:"top_p"`
			TopK        *int     `yaml:"top_k"`
			Seed        *int     `yaml:"seed"`
			Stop        []string `yaml:"stop"`
		}
		// The generate stage reports its own options' errors.
		_ = h.spec.Decode(up.With, &theirs)
		s := map[string]any{}
		for k, v := range map[string]any{"temperature": theirs.Temperature, "top_p": theirs.TopP, "top_k": theirs.TopK, "seed": theirs.Seed} {
			switch x := v.(type) {
			case *float64:
				if x != nil {
					s[k] = *x
				}
			case *int:
				if x != nil {
					s[k] = *x
				}
			}
		}
		if len(theirs.Stop) > 0 {
			s["stop"] = theirs.Stop
		}
		g := genInfo{Endpoint: theirs.Endpoint, Sampling: s, sampling: s, endpoint: theirs.Endpoint}
		if g.Endpoint == "" && len(h.spec.Endpoints) == 1 {
			g.Endpoint, g.endpoint = h.spec.Endpoints[0].Name, h.spec.Endpoints[0].Name
		}
		if ep := h.spec.Endpoint(g.Endpoint); ep != nil {
			g.API, g.Model = ep.API, ep.Model
		}
		h.gen = g
	})
	return h.gen
}

// eagletVersion is the module version the binary was built from.
func eagletVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		v := bi.Main.Version
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				v += " " + s.Value[:12]
			}
		}
		return v
	}
	return "unknown"
}

// dataCard is the version's README.md, as dataset hubs expect one.
func dataCard(m *Manifest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "---\nlicense: other\ntags: [eagle3, speculative-decoding, eaglet]\nconfigs:\n- config_name: default\n  data_files: \"%s/*.jsonl\"\n---\n\n", dataDir)
	fmt.Fprintf(&b, "# %s, version %s\n\n", m.Spec, m.Version)
	fmt.Fprintf(&b, "Training rows for an EAGLE-3 draft model, written by eaglet (%s) on %s from stage `%s`.\n", m.Eaglet, m.CreatedAt.Format(time.DateOnly), m.Stage)
	fmt.Fprintf(&b, "Every row is one assistant turn the target model generated itself")
	if g := m.Generation; g.Model != "" {
		fmt.Fprintf(&b, " (model `%s` behind endpoint `%s`, API %s)", g.Model, g.Endpoint, g.API)
	}
	b.WriteString("; turns the source dataset wrote are context only, never supervised.\n\n")
	fmt.Fprintf(&b, "- Format: `%s`\n- Rows: %d in %d shards\n- Tokens: %d, supervised %d\n", m.Format, m.Rows, len(m.Shards), m.Tokens, m.SupervisedTokens)
	if m.MaxLength > 0 {
		fmt.Fprintf(&b, "- Trainer window: %d tokens, longer rows: %s\n", m.MaxLength, m.OnOverflow)
	}
	if t := m.Tokenizer; t != nil {
		fmt.Fprintf(&b, "- Tokenizer: `%s` (files sha256 %s), chat template sha256 %s\n", t.Path, t.FilesSHA, t.ChatTemplateSHA)
	}
	if d := m.DraftVocab; d != nil {
		fmt.Fprintf(&b, "- Draft vocabulary: %s\n", d)
	}
	if len(m.Generation.Sampling) > 0 {
		sb, _ := json.Marshal(m.Generation.Sampling)
		fmt.Fprintf(&b, "- Sampling: `%s`\n", sb)
	}
	for _, s := range m.Serving {
		fmt.Fprintf(&b, "- Served by: %s, %d rows\n", s.label(), s.Rows)
	}
	for _, w := range m.Warnings {
		fmt.Fprintf(&b, "- Warning: %s\n", w)
	}
	b.WriteString("\n| dataset | records | turns | rows | tokens | supervised | dropped |\n|---|---|---|---|---|---|---|\n")
	for _, name := range sortedKeys(m.Datasets) {
		d := m.Datasets[name]
		var drops []string
		for _, r := range sortedKeys(d.Dropped) {
			drops = append(drops, fmt.Sprintf("%d %s", d.Dropped[r], r))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %s |\n", name, d.Records, d.Turns, d.Rows, d.Tokens, d.SupervisedTokens, strings.Join(drops, "; "))
	}
	b.WriteString("\n`manifest.json` beside this card has the full accounting, the shards' checksums and length histograms.\n")
	return b.String()
}
