package handoff_test

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/sim"
	"github.com/eaglet-dev/eaglet/internal/sim/server"
	"github.com/eaglet-dev/eaglet/internal/sim/simtest"
)

// qwen3Model is the Qwen3 tokenizer in a model directory of its own, with
// a config.json giving the model's vocab_size (151,936, padded beyond the
// tokenizer's ids) as Qwen3's does.
func qwen3Model(t *testing.T) string {
	t.Helper()
	src, _ := qwen3(t)
	dir := t.TempDir()
	files, err := filepath.Glob(filepath.Join(src, "tokenizer*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no tokenizer files in %s (%v)", src, err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"hidden_size": 1024, "vocab_size": 151936}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

// npyValues reads a one-dimensional .npy file's values as numpy.load
// would for '<i8' and '|b1', the two dtypes the mapping uses.
func npyValues(t *testing.T, path string) (descr string, values []int64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := int(binary.LittleEndian.Uint16(b[8:10]))
	header, data := string(b[10:10+n]), b[10+n:]
	descr = header[strings.Index(header, "'descr': '")+10:]
	descr = descr[:strings.IndexByte(descr, '\'')]
	shape := header[strings.Index(header, "'shape': (")+10:]
	count, err := strconv.Atoi(shape[:strings.IndexByte(shape, ',')])
	if err != nil {
		t.Fatalf("%s: header %q: %v", path, header, err)
	}
	size := map[string]int{"<i8": 8, "|b1": 1}[descr]
	if size == 0 || len(data) != count*size {
		t.Fatalf("%s: %d data bytes for %d values of %q", path, len(data), count, descr)
	}
	for i := range count {
		if size == 8 {
			values = append(values, int64(binary.LittleEndian.Uint64(data[8*i:])))
		} else {
			values = append(values, int64(data[i]))
		}
	}
	return descr, values
}

// TestHandoff_DraftVocab: with draft_vocab the version holds d2t.npy,
// t2d.npy and token_freq.json beside its manifest, and they are what
// speculators' build_vocab_mappings_from_distribution makes of the rows
// written (counting loss-mask 1 ids, most frequent first, ties to the
// lower id, then ascending), passing its load_vocab_mappings checks; the
// manifest's coverage is the share of supervised tokens kept.
func TestHandoff_DraftVocab(t *testing.T) {
	model := qwen3Model(t)
	url := simtest.Serve(t, server.Config{Model: sim.New(sim.Config{Seed: 3, MeanTokens: 60}), Name: "target"})
	dir := workdir(t)
	const size = 64
	spec := fmt.Sprintf(`version: 1
name: draft-vocab
state: state.db
datasets: {d: {source: convos.jsonl, format: messages}}
endpoints: {sg: {api: sglang, urls: [%q], model: target}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: tokenize, uses: tokenize, needs: [load], foreach: datasets, with: {tokenizer: %q}}
  - {name: generate, uses: generate, needs: [tokenize], foreach: datasets, with: {max_tokens: 300}}
  - {name: handoff, uses: handoff, needs: [generate], with: {out: out, shards: 2, draft_vocab: {size: %d}}}
`, url, model, size)
	_, first, _ := enginetest.OpenAndRun(t, dir, spec)
	first.Close() // the plan below opens the store again
	version := filepath.Join(dir, "out", "current")

	// The consumer's rule, over the rows as the trainer reads them.
	freq := map[int]int64{}
	var supervisedTokens int64
	for _, r := range readSpeculators(t, version) {
		for _, id := range supervised(r) {
			freq[id]++
			supervisedTokens++
		}
	}
	ids := make([]int, 0, len(freq))
	for id := range freq {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b int) int {
		if freq[a] != freq[b] {
			return int(freq[b] - freq[a])
		}
		return a - b
	})
	if len(ids) <= size {
		t.Fatalf("only %d distinct supervised ids; the test wants more than the draft vocabulary's %d", len(ids), size)
	}
	kept := slices.Clone(ids[:size])
	var covered int64
	for _, id := range kept {
		covered += freq[id]
	}
	slices.Sort(kept)

	descr, d2t := npyValues(t, filepath.Join(version, "d2t.npy"))
	if descr != "<i8" || len(d2t) != size {
		t.Fatalf("d2t.npy: %d values of %s; want %d int64 (torch.long)", len(d2t), descr, size)
	}
	var fromD2T []int
	for i, off := range d2t {
		fromD2T = append(fromD2T, i+int(off))
	}
	if !slices.Equal(fromD2T, kept) {
		t.Errorf("d2t + arange = %v\nwant the %d most supervised ids, ascending: %v", fromD2T, size, kept)
	}
	descr, t2d := npyValues(t, filepath.Join(version, "t2d.npy"))
	if descr != "|b1" || len(t2d) != 151936 {
		t.Fatalf("t2d.npy: %d values of %s; want config.json's 151936 bools", len(t2d), descr)
	}
	var nonzero []int
	for id, v := range t2d {
		if v != 0 {
			nonzero = append(nonzero, id)
		}
	}
	if !slices.Equal(nonzero, kept) {
		t.Errorf("t2d marks %d ids; want the %d of d2t", len(nonzero), size)
	}

	b, err := os.ReadFile(filepath.Join(version, "token_freq.json"))
	if err != nil {
		t.Fatal(err)
	}
	var written map[string]int64
	if err := json.Unmarshal(b, &written); err != nil {
		t.Fatal(err)
	}
	if len(written) != len(freq) {
		t.Errorf("token_freq.json has %d ids; the rows supervise %d", len(written), len(freq))
	}
	for id, n := range freq {
		if written[strconv.Itoa(id)] != n {
			t.Errorf("token_freq.json[%d] = %d; the rows supervise it %d times", id, written[strconv.Itoa(id)], n)
		}
	}

	var m struct {
		SupervisedTokens int64 `json:"supervised_tokens"`
		DraftVocab       struct {
			Size             int     `json:"size"`
			TargetSize       int     `json:"target_size"`
			Coverage         float64 `json:"coverage"`
			CoveredTokens    int64   `json:"covered_tokens"`
			SupervisedTokens int64   `json:"supervised_tokens"`
			D2T              string  `json:"d2t"`
		} `json:"draft_vocab"`
	}
	b, err = os.ReadFile(filepath.Join(version, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	dv := m.DraftVocab
	if dv.Size != size || dv.TargetSize != 151936 || dv.D2T != "d2t.npy" {
		t.Errorf("manifest draft_vocab %+v; want size %d of 151936, d2t.npy", dv, size)
	}
	if dv.SupervisedTokens != supervisedTokens || m.SupervisedTokens != supervisedTokens || dv.CoveredTokens != covered ||
		dv.Coverage != float64(covered)/float64(supervisedTokens) {
		t.Errorf("manifest: coverage %v (%d of %d, manifest's supervised %d); want %d of the rows' %d supervised tokens",
			dv.Coverage, dv.CoveredTokens, dv.SupervisedTokens, m.SupervisedTokens, covered, supervisedTokens)
	}
	if dv.Coverage <= 0 || dv.Coverage >= 1 {
		t.Errorf("coverage %v; want a share strictly between 0 and 1 with more distinct ids than the vocabulary", dv.Coverage)
	}
	// Plan knows the coverage of another size from the rows: its dry run
	// judges them as Finish will.
	p, store := enginetest.Open(t, dir, strings.Replace(spec, fmt.Sprintf("size: %d", size), "size: 16", 1))
	var covered16 int64
	for _, id := range ids[:16] {
		covered16 += freq[id]
	}
	want := fmt.Sprintf("draft vocabulary: 16 of 151936 ids, covering %.2f%% of %d supervised tokens", 100*float64(covered16)/float64(supervisedTokens), supervisedTokens)
	planned := false
	for _, st := range p.Plan(store, engine.Selection{}) {
		if st.Node.ID == "handoff" {
			planned = true
			if !slices.ContainsFunc(st.Figures, func(n string) bool { return strings.HasPrefix(n, want) }) {
				t.Errorf("plan's handoff figures %q; want %q", st.Figures, want)
			}
		}
	}
	if !planned {
		t.Error("plan has no handoff step")
	}
	card, err := os.ReadFile(filepath.Join(version, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("covering %.2f%%", 100*dv.Coverage); !strings.Contains(string(card), want) {
		t.Errorf("data card does not say %q:\n%s", want, card)
	}
}

// TestCheck_DraftVocab: each bad draft_vocab is refused at its line.
func TestCheck_DraftVocab(t *testing.T) {
	model := qwen3Model(t)
	bare, _ := qwen3(t) // no config.json
	for _, tc := range []struct {
		name, with string
		line       int
		want       string
	}{
		{"zero size", fmt.Sprintf("tokenizer: %q\n      draft_vocab: {size: 0}", model), 13, "draft_vocab size is 0; use 1 or more"},
		{"whole target", fmt.Sprintf("tokenizer: %q\n      draft_vocab: {size: 151936}", model), 13, "not below the target's 151936 ids"},
		{"zero target", fmt.Sprintf("tokenizer: %q\n      draft_vocab: {size: 8, target_size: 0}", model), 13, "target_size is 0"},
		{"no config.json", fmt.Sprintf("tokenizer: %q\n      draft_vocab: {size: 8}", bare), 13, "has no config.json with vocab_size"},
		{"no size", fmt.Sprintf("tokenizer: %q\n      draft_vocab: {target_size: 100}", model), 13, "draft_vocab needs `size:`"},
		{"no tokenizer", "format: messages\n      draft_vocab: {size: 8, target_size: 100}", 13, "needs the target's tokenizer"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := workdir(t)
			spec := fmt.Sprintf(`version: 1
name: x
state: state.db
datasets: {d: {source: convos.jsonl, format: messages}}
stages:
  - {name: load, uses: load, foreach: datasets}
  - name: handoff
    uses: handoff
    needs: [load]
    with:
      out: out
      %s
`, tc.with)
			err := enginetest.LoadErr(t, dir, spec)
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v; want %q", err, tc.want)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("spec.yaml:%d:", tc.line)) {
				t.Errorf("error %v; want it at line %d", err, tc.line)
			}
		})
	}
}
