package handoff

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/draftvocab"
	"github.com/eaglet-dev/eaglet/internal/outfile"
	"github.com/eaglet-dev/eaglet/stages"
)

// The layout of out: each version in its own directory named by its
// content, data files alone under data/ (speculators loads every .json and
// .jsonl file of a directory it is given), and `current` pointing at the
// latest version.
const (
	currentLink = "current"
	dataDir     = "data"
)

// shardBuffer is each shard file's write buffer while a version is written.
const shardBuffer = 256 << 10

// version is a written (or found again) version directory.
type version struct {
	dir, rel string
	hash     string
	shards   []shardFile
	rows     int
	tokens   int64
	// supervised counts loss-mask ones (token formats) or answer tokens.
	supervised int64
	reused     string // a note when an identical version existed
	manifest   *Manifest
	// counts are the supervised ids of the rows written, when the
	// handoff writes a draft vocabulary.
	counts draftvocab.Counts
}

// shardFile is one data file being written.
type shardFile struct {
	Path       string `json:"path"`
	Rows       int    `json:"rows"`
	Tokens     int64  `json:"tokens"`
	Supervised int64  `json:"supervised_tokens"`
	SHA256     string `json:"sha256"`
	f          *os.File
	w          *bufio.Writer
	h          hash.Hash
}

// write builds every row and deals it to the shard with the fewest tokens
// so far, into a temporary directory; the content names the version, and
// an identical version already there is kept as it is.
func (h *Handoff) write(ctx context.Context, in stages.Input) (*version, error) {
	if err := os.MkdirAll(h.out, 0o755); err != nil {
		return nil, err
	}
	if err := h.claim(); err != nil {
		return nil, err
	}
	if err := h.removeKilledWrites(); err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp(h.out, tmpPrefix)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp) // gone once renamed; a failed write leaves nothing
	// MkdirTemp makes it private; the version is for the trainer's user too.
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, err
	}
	if err := os.Mkdir(filepath.Join(tmp, dataDir), 0o755); err != nil {
		return nil, err
	}
	v := &version{manifest: h.newManifest()}
	if h.opts.DraftVocab != nil {
		v.counts = draftvocab.Counts{}
	}
	for _, d := range h.runDrops {
		ds := v.manifest.dataset(d.dataset)
		ds.Records++
		ds.Turns += d.turns
		ds.Dropped = addCount(ds.Dropped, d.reason, d.turns)
	}
	n := h.opts.Shards
	for i := range n {
		name := fmt.Sprintf("shard-%05d-of-%05d.jsonl", i, n)
		f, err := os.Create(filepath.Join(tmp, dataDir, name))
		if err != nil {
			return nil, err
		}
		defer f.Close()
		sh := sha256.New()
		v.shards = append(v.shards, shardFile{Path: dataDir + "/" + name, f: f, h: sh, w: bufio.NewWriterSize(io.MultiWriter(f, sh), shardBuffer)})
	}
	err = in.Each(ctx, func(rec *conv.Record) error {
		rows, err := h.rows(rec, v.manifest, v.counts)
		if err != nil {
			return fmt.Errorf("record %s (%s): %w", rec.Key, rec.Dataset, err)
		}
		for _, r := range rows {
			s := lightest(v.shards)
			if _, err := s.w.Write(r.line); err != nil {
				return err
			}
			s.Rows++
			s.Tokens += int64(r.tokens)
			s.Supervised += int64(r.supervised)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	whole := sha256.New()
	fmt.Fprintf(whole, "eaglet handoff %s %d\n", h.opts.Format, n)
	if dv := h.opts.DraftVocab; dv != nil {
		// Files of the version beside its shards: another vocabulary is
		// another version, never one rewritten in place.
		fmt.Fprintf(whole, "draft_vocab %d of %d\n", dv.Size, dv.TargetSize)
	}
	for i := range v.shards {
		s := &v.shards[i]
		if err := s.w.Flush(); err != nil {
			return nil, err
		}
		if err := s.f.Sync(); err != nil {
			return nil, err
		}
		s.SHA256 = hex.EncodeToString(s.h.Sum(nil))
		fmt.Fprintln(whole, s.SHA256)
		v.rows += s.Rows
		v.tokens += s.Tokens
		v.supervised += s.Supervised
	}
	v.hash = hex.EncodeToString(whole.Sum(nil))[:16]
	v.rel = "v-" + v.hash
	v.dir = filepath.Join(h.out, v.rel)
	m := v.manifest
	m.Version, m.Shards = v.hash, v.shards
	m.Rows, m.Tokens, m.SupervisedTokens = v.rows, v.tokens, v.supervised
	m.HiddenState = h.hiddenStates(v.tokens)
	m.settleServing()
	var vocab *draftvocab.Mapping
	if v.counts != nil {
		if vocab, m.DraftVocab, err = buildVocab(h.opts.DraftVocab, v.counts); err != nil {
			return nil, err
		}
	}
	if _, err := os.Stat(v.dir); err == nil {
		v.reused = "; unchanged, version " + v.rel + " kept"
	} else {
		if vocab != nil {
			if err := draftvocab.Write(tmp, vocab, v.counts); err != nil {
				return nil, fmt.Errorf("draft_vocab: %w", err)
			}
		}
		if err := writeJSON(filepath.Join(tmp, "manifest.json"), m); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(tmp, "README.md"), []byte(dataCard(m)), 0o644); err != nil {
			return nil, err
		}
		if err := os.Rename(tmp, v.dir); err != nil {
			return nil, err
		}
	}
	return v, pointCurrent(h.out, v.rel)
}

// tmpPrefix begins the name of the directory a version is written in
// before it is renamed to its own.
const tmpPrefix = ".tmp-"

// killedWrite matches the directories os.MkdirTemp names with tmpPrefix.
var killedWrite = regexp.MustCompile(`^` + regexp.QuoteMeta(tmpPrefix) + `[0-9]+$`)

// removeKilledWrites deletes what a killed write left in out: a version's
// shards, as large as the version, that no run will finish. Only one run
// uses a spec's store at a time, so none of them is still being written.
func (h *Handoff) removeKilledWrites() error {
	entries, err := os.ReadDir(h.out)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if e.IsDir() && killedWrite.MatchString(e.Name()) {
			if err := os.RemoveAll(filepath.Join(h.out, e.Name())); err != nil {
				return fmt.Errorf("remove what a killed run left: %w", err)
			}
			h.inst.Log("removed %s, left by a run killed while it wrote a version", e.Name())
		}
	}
	return nil
}

// claim marks out as eaglet's, as outfile does for a file, so that a later
// validation knows the directory may be written.
func (h *Handoff) claim() error {
	spec, err := filepath.Abs(h.spec.Path)
	if err != nil {
		spec = h.spec.Path
	}
	return outfile.Claim(h.out, outfile.Options{Spec: spec, Stage: h.inst.ID})
}

// lightest is the shard holding the fewest tokens, the first on ties.
func lightest(shards []shardFile) *shardFile {
	best := &shards[0]
	for i := range shards {
		if shards[i].Tokens < best.Tokens {
			best = &shards[i]
		}
	}
	return best
}

// pointCurrent makes out/current point at rel, replacing the link at once.
func pointCurrent(out, rel string) error {
	link := filepath.Join(out, currentLink)
	tmp := link + ".tmp"
	_ = os.Remove(tmp)
	if err := os.Symlink(rel, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// row is one line of a shard.
type row struct {
	line       []byte
	tokens     int
	supervised int
}

// rows builds a record's rows in the handoff's format, counting in m what
// became of each turn.
func (h *Handoff) rows(rec *conv.Record, m *Manifest, counts draftvocab.Counts) ([]row, error) {
	ds := m.dataset(rec.Dataset)
	ds.Records++
	var out []row
	for _, t := range answers(rec) {
		ds.Turns++
		tk, reason, err := h.judge(rec, t)
		if err != nil {
			return nil, err
		}
		if reason != "" {
			ds.drop(reason)
			continue
		}
		r, err := h.row(rec, t, tk)
		if err != nil {
			return nil, err
		}
		if tk != nil {
			// Per row written, as the warnings about them say.
			m.count(tk)
			if counts != nil {
				counts.Add(tk.ids, tk.mask)
			}
		}
		ds.Rows++
		ds.Tokens += int64(r.tokens)
		ds.SupervisedTokens += int64(r.supervised)
		ds.addLength(r.tokens)
		var served *conv.Served
		if rec.Generation != nil {
			served = rec.Generation.Served
		}
		m.countServed(served)
		out = append(out, r)
	}
	return out, nil
}

// rowID names a row: the record's key and the turn, as speculators'
// regeneration names its rows (conversation id, _gen, index).
func rowID(rec *conv.Record, t answer) string { return fmt.Sprintf("%s_gen%d", rec.Key, t.index) }

// row builds one turn's line from its ids (nil without a tokenizer).
func (h *Handoff) row(rec *conv.Record, t answer, tk *tokens) (row, error) {
	var v any
	switch h.opts.Format {
	case FormatSpeculators:
		v = speculatorsRow{ID: rowID(rec, t), PrimaryID: rec.Key, InputIDs: tk.ids, LossMask: tk.mask, Metadata: h.metadata(rec, t, tk)}
	case FormatSpecForgeText:
		// The row's own ids as text, not the template's render of the
		// conversation: SpecForge tokenizes this text and supervises
		// each assistant span, so it must hold the served context and
		// the target's ids, without the empty think block Qwen3's
		// template renders into an answer that wrote none, and without
		// an end-of-turn after a max_tokens cut.
		v = textRow{ID: rowID(rec, t), Text: h.tmpl.Tokenizer().Decode(tk.ids), Metadata: h.metadata(rec, t, tk)}
	default:
		if h.opts.Format == FormatSpecForge {
			// judge dropped the turns SpecForge's validator would stop at.
			r := conv.NewSpecForgeRow(rowID(rec, t), t.conversation(), rec.Tools)
			r.Status, r.Metadata = "success", h.metadata(rec, t, tk)
			v = r
		} else {
			convo := conv.ToOpenAI(t.conversation())
			keepNull(convo, t.conversation())
			v = messagesRow{ID: rowID(rec, t), Messages: convo, Tools: conv.ToolsToOpenAI(rec.Tools), Metadata: h.metadata(rec, t, tk)}
		}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return row{}, err
	}
	r := row{line: append(b, '\n')}
	if tk != nil {
		r.tokens, r.supervised = len(tk.ids), tk.supervised
	} else {
		r.tokens, r.supervised = t.promptTokens+t.completionTokens, t.completionTokens
	}
	return r, nil
}

// keepNull gives back null content where the served message had it: a
// Hugging Face template may branch on it (DeepSeek-V3 renders an
// assistant's tool calls only when its content is None), so "" would
// render another conversation than the one served.
func keepNull(out []conv.OpenAIMessage, msgs []conv.Message) {
	for i, m := range msgs {
		if m.NullContent && m.Content == "" {
			out[i].Content = nil
		}
	}
}

// specForgeInvalid applies SpecForge's validate_regenerated_data.py rules
// to a conversation: non-empty string contents, a system turn only before
// the first user turn, then user and assistant alternating, ending with
// the assistant. It returns the broken rule, or "".
func specForgeInvalid(msgs []conv.OpenAIMessage) string {
	want, sawUser := conv.User, false
	for i, m := range msgs {
		if text, ok := m.Content.(string); !ok || strings.TrimSpace(text) == "" {
			return fmt.Sprintf("message %d content is empty (tool calls alone, or an empty turn)", i)
		}
		if m.Role == conv.System && !sawUser {
			continue
		}
		if m.Role != conv.User && m.Role != conv.Assistant {
			return fmt.Sprintf("message %d has role %s (tool turns)", i, m.Role)
		}
		if m.Role != want {
			return fmt.Sprintf("message %d is %s where %s was expected", i, m.Role, want)
		}
		sawUser = true
		want = map[string]string{conv.User: conv.Assistant, conv.Assistant: conv.User}[m.Role]
	}
	if !sawUser {
		return "no user message"
	}
	return ""
}

// Row shapes, field for field as each consumer reads them.
type (
	// speculatorsRow is what speculators' prepare_data.py passes through
	// without rendering: its regeneration script's own row.
	speculatorsRow struct {
		ID        string   `json:"id"`
		PrimaryID string   `json:"primary_id"`
		InputIDs  []int    `json:"input_ids"`
		LossMask  []int    `json:"loss_mask"`
		Metadata  metadata `json:"metadata"`
	}
	// textRow is the rendered conversation for SpecForge's --is-preformatted.
	textRow struct {
		ID       string   `json:"id"`
		Text     string   `json:"text"`
		Metadata metadata `json:"metadata"`
	}
	messagesRow struct {
		ID       string               `json:"id"`
		Messages []conv.OpenAIMessage `json:"messages"`
		Tools    []conv.OpenAITool    `json:"tools,omitempty"`
		Metadata metadata             `json:"metadata"`
	}
	metadata struct {
		Dataset      string         `json:"dataset"`
		SourceID     string         `json:"source_id"`
		Key          string         `json:"key"`
		Turn         int            `json:"turn"`
		FinishReason string         `json:"finish_reason"`
		Usage        usage          `json:"usage"`
		Sampling     map[string]any `json:"sampling,omitempty"`
		Model        string         `json:"model,omitempty"`
		Endpoint     string         `json:"endpoint,omitempty"`
		IDsFrom      string         `json:"ids_from,omitempty"`
		PromptCheck  string         `json:"prompt_check,omitempty"`
		// ContextTokens is the row's context length where it differs from
		// the server's count (usage.prompt_tokens): a mismatch's figures.
		ContextTokens int `json:"context_tokens,omitempty"`
	}
	usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	}
)

func (h *Handoff) metadata(rec *conv.Record, t answer, tk *tokens) metadata {
	md := metadata{Dataset: rec.Dataset, SourceID: rec.Source.ID, Key: rec.Key, Turn: t.index, FinishReason: t.finish,
		Usage: usage{t.promptTokens, t.completionTokens}}
	if g := rec.Generation; g != nil {
		md.Model = g.Model
	}
	gen := h.generation()
	md.Sampling, md.Endpoint = gen.sampling, gen.endpoint
	if tk != nil {
		md.IDsFrom, md.PromptCheck = tk.from, tk.check
		if tk.check == promptMismatch {
			md.ContextTokens = tk.contextLen
		}
	}
	return md
}

// sortedKeys returns a map's keys in order, for stable output.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
