// Package dedupe is the stage that keeps one copy of each prompt before
// anything is generated: exact duplicates (the same prompt up to case and
// whitespace), near duplicates (MinHash LSH over word shingles) and,
// optionally, prompts that share an n-gram with a benchmark.
package dedupe

import (
	"cmp"
	"context"
	"encoding/hex"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/human"
	"github.com/eaglet-dev/eaglet/stages"
)

func init() {
	stages.Register(stages.Define("dedupe",
		"keep one copy of each prompt across datasets (exact and near duplicates) and drop or flag benchmark prompts",
		check, newDedupe))
}

// Dedupe is one instance of the stage.
type Dedupe struct {
	near      bool
	threshold float64
	numPerm   int
	mh        *minHasher
	// order is the datasets in survival order; rank maps a name to its place.
	order []string
	rank  map[string]int
	// bench is nil without decontamination; benchPaths are resolved.
	bench      *benchIndex
	benchPaths []string
	benchNames []string
	flag       bool
	ngram      int
	minWords   int

	examples []stages.Example
	flagged  map[string]int
	// figures name the benchmark prompts that matched the most records.
	figures []string
}

var (
	_ stages.Batch         = (*Dedupe)(nil)
	_ stages.Fingerprinter = (*Dedupe)(nil)
	_ stages.Estimator     = (*Dedupe)(nil)
)

func newDedupe(inst *stages.Instance, o *Options) (stages.Stage, error) {
	d := &Dedupe{near: *o.Near, threshold: o.Threshold, numPerm: o.NumPerm, rank: map[string]int{}}
	d.mh = newMinHasher(d.numPerm, o.Shingle)
	for _, name := range o.Priority {
		d.rankOf(name)
	}
	for _, ds := range inst.Spec.Datasets {
		d.rankOf(ds.Name)
	}
	if dc := o.Decontaminate; dc != nil {
		d.flag, d.ngram, d.minWords = dc.Action == "flag", dc.NGram, dc.MinWords
		if d.ngram == 0 {
			d.ngram = defaultNGram
		}
		for _, b := range dc.Benchmarks {
			d.benchPaths = append(d.benchPaths, inst.Spec.Resolve(b))
			d.benchNames = append(d.benchNames, inst.Spec.Redact(b))
		}
	}
	return d, nil
}

// rankOf returns a dataset's place in survival order; datasets the spec
// does not name (records of a stage that renamed them) come last, in the
// order they are met.
func (d *Dedupe) rankOf(name string) int {
	r, ok := d.rank[name]
	if !ok {
		r = len(d.order)
		d.rank[name] = r
		d.order = append(d.order, name)
	}
	return r
}

// Fingerprint adds what decides survivors beyond the options: the order of
// the spec's datasets, and the benchmark files' content.
func (d *Dedupe) Fingerprint() (string, error) {
	fp := "order=" + strings.Join(d.order, ",")
	if len(d.benchPaths) > 0 {
		h, err := fileHashes(d.benchPaths, d.benchNames)
		if err != nil {
			return "", err
		}
		fp += " benchmarks=" + h
	}
	return fp, nil
}

// Estimate is at most the input, a guess until the stage has run (plan's
// dry run then counts the survivors).
func (d *Dedupe) Estimate(in stages.Estimate) (stages.Estimate, error) {
	in.Exact = false
	return in, nil
}

// entry is what the stage keeps of a record between its two passes: a
// fixed size, never the text (its signature is kept apart, in sigs).
type entry struct {
	key   [16]byte
	exact uint64
	rank  uint32
	// hit is 1 + the index of the benchmark ref the prompt matched, 0 for none.
	hit uint32
	// noSig marks a prompt without words, which has no near duplicates.
	noSig bool
}

// keyBytes packs a record key (32 hex digits) into 16 bytes that sort as
// the key does.
func keyBytes(key string) [16]byte {
	var k [16]byte
	if b, err := hex.DecodeString(key); err == nil && len(b) == len(k) {
		copy(k[:], b)
		return k
	}
	copy(k[:], key) // not a content key: still a stable tie-break
	return k
}

// Run reads the input twice: the first pass keeps a fixed-size entry and
// signature per record and finds the groups of duplicates, the second
// passes on each group's survivor and drops the rest, naming the survivor.
func (d *Dedupe) Run(ctx context.Context, in stages.Input, out stages.Output) error {
	each := in.Each
	if c, ok := in.(stages.CopyInput); ok {
		// The same record in two datasets is two copies to choose from.
		each = c.EachCopy
	}
	if len(d.benchPaths) > 0 {
		ix, err := readBenchmarks(d.benchPaths, d.benchNames, d.ngram, d.minWords)
		if err != nil {
			return err
		}
		d.bench = ix
	}
	ents := make([]entry, 0, in.Count())
	var sigs []byte
	if d.near {
		sigs = make([]byte, 0, in.Count()*d.numPerm)
	}
	var hits []benchRef
	var words []uint64
	err := each(ctx, func(rec *conv.Record) error {
		e := entry{key: keyBytes(rec.Key), exact: exactHash(rec), rank: uint32(d.rankOf(rec.Dataset))}
		words = wordHashes(words[:0], promptText(rec))
		if d.bench != nil {
			if ref, _, _, ok := d.bench.match(words); ok {
				hits = append(hits, ref)
				e.hit = uint32(len(hits))
			}
		}
		if d.near {
			var ok bool
			if sigs, ok = d.mh.sign(sigs, words); !ok {
				sigs = append(sigs, make([]byte, d.numPerm)...)
				e.noSig = true
			}
		}
		ents = append(ents, e)
		return nil
	})
	if err != nil {
		return err
	}
	uf := d.group(ents, sigs)

	d.examples, d.flagged = nil, map[string]int{}
	items := map[benchRef]*itemHits{}
	took := func(rec *conv.Record, ref benchRef) {
		it := items[ref]
		if it == nil {
			it = &itemHits{ref: ref, text: d.benchExample("", rec, ref).Text}
			items[ref] = it
		}
		it.records++
	}
	shown := map[string]int{}
	example := func(kind string, ex stages.Example) {
		if shown[kind] < examplesPerKind {
			shown[kind]++
			d.examples = append(d.examples, ex)
		}
	}
	i := 0
	err = each(ctx, func(rec *conv.Record) error {
		if i >= len(ents) || ents[i].key != keyBytes(rec.Key) {
			return fmt.Errorf("the input changed while dedupe read it (record %s); run again", rec.Key)
		}
		e := ents[i]
		root := int(uf.find(uint32(i)))
		i++
		switch {
		case e.hit > 0 && !d.flag:
			ref := hits[e.hit-1]
			reason := fmt.Sprintf("%s: contaminated (%s)", rec.Dataset, d.bench.files[ref.file])
			out.Drop(reason)
			example("contaminated", d.benchExample(reason, rec, ref))
			took(rec, ref)
			return nil
		case root != i-1:
			s, kind := ents[root], "exact"
			if s.exact != e.exact {
				kind = "near"
			}
			reason := fmt.Sprintf("%s: %s duplicate of %s", rec.Dataset, kind, d.order[s.rank])
			out.Drop(reason)
			ex := stages.Example{Reason: reason, Record: name(rec.Dataset, rec.Key, rec.Source), Match: d.order[s.rank] + "/" + hex.EncodeToString(s.key[:])}
			if kind == "near" {
				ex.Similarity = similarity(sigs[(i-1)*d.numPerm:i*d.numPerm], sigs[root*d.numPerm:(root+1)*d.numPerm])
			}
			example(kind, ex)
			return nil
		case e.hit > 0:
			ref := hits[e.hit-1]
			reason := fmt.Sprintf("%s: contaminated (%s)", rec.Dataset, d.bench.files[ref.file])
			d.flagged[reason]++
			example("flagged", d.benchExample(reason, rec, ref))
			took(rec, ref)
		}
		return out.Keep(rec)
	})
	if err == nil && i != len(ents) {
		err = fmt.Errorf("the input changed while dedupe read it (%d records, then %d); run again", len(ents), i)
	}
	d.figures = d.itemLines(items, len(ents))
	return err
}

// itemHits is what one benchmark prompt matched: how many records, and
// the words they share with it.
type itemHits struct {
	ref     benchRef
	records int
	text    string
}

// topItems is how many benchmark prompts the lines name.
const topItems = 5

// itemLines says which benchmark prompts took the most records, so a
// short prompt matched whole ("What is 2+2?" in 175 chat rows) is seen
// rather than hidden in a total, and warns of each short one that took an
// outsized share of the input's records.
func (d *Dedupe) itemLines(items map[benchRef]*itemHits, records int) []string {
	var lines []string
	if d.bench != nil && d.bench.left > 0 {
		lines = append(lines, fmt.Sprintf("%s of %d had fewer than min_words (%d) words and matched nothing",
			human.Plural(d.bench.left, "benchmark prompt"), d.bench.prompts, d.bench.minWords))
	}
	if len(items) == 0 {
		return lines
	}
	all := slices.SortedFunc(maps.Values(items), func(a, b *itemHits) int {
		return cmp.Or(cmp.Compare(b.records, a.records), cmp.Compare(a.ref.file, b.ref.file), cmp.Compare(a.ref.index, b.ref.index))
	})
	verb := "took"
	if d.flag {
		verb = "flagged"
	}
	lines = append(lines, fmt.Sprintf("%s of %d matched a record; the most:", human.Plural(len(all), "benchmark prompt"), d.bench.prompts))
	for _, it := range all[:min(topItems, len(all))] {
		line := fmt.Sprintf("  %s %s %s", d.bench.where(it.ref), verb, human.Plural(it.records, "record"))
		if it.text != "" {
			line += fmt.Sprintf(" (%q)", it.text)
		}
		lines = append(lines, line)
	}
	for _, it := range all {
		if it.ref.words == 0 || !outsized(it.records, records) {
			continue
		}
		lines = append(lines, fmt.Sprintf("warning: %s has %s, fewer than ngram (%d), so it is matched whole, and it %s %d of %d records (%.0f%%); "+
			"if those are not copies of it, set decontaminate.min_words to %d or more",
			d.bench.where(it.ref), human.Plural(int(it.ref.words), "word"), d.bench.n, verb, it.records, records,
			100*float64(it.records)/float64(records), it.ref.words+1))
	}
	return lines
}

// outsized reports whether one benchmark prompt matching n of records is
// more than a benchmark item plausibly has copies in training data: at
// least 5 records and 2% of them.
func outsized(n, records int) bool {
	return n >= 5 && n*50 >= records
}

// group puts each record in a group with its duplicates: exact copies
// always, near ones when their LSH bands meet and their estimated
// similarity reaches the threshold. Contaminated prompts being dropped take
// no part, so they never decide which copy survives.
func (d *Dedupe) group(ents []entry, sigs []byte) *unionFind {
	n := len(ents)
	uf := &unionFind{parent: make([]uint32, n), pos: make([]uint32, n)}
	order := make([]uint32, n)
	for i := range n {
		uf.parent[i], order[i] = uint32(i), uint32(i)
	}
	slices.SortFunc(order, func(a, b uint32) int {
		if c := int(ents[a].rank) - int(ents[b].rank); c != 0 {
			return c
		}
		return slices.Compare(ents[a].key[:], ents[b].key[:])
	})
	for p, i := range order {
		uf.pos[i] = uint32(p)
	}
	order = nil
	skip := func(e entry) bool { return e.hit > 0 && !d.flag }

	// bucket pairs a hash with a record; sorted, equal hashes are neighbours.
	type bucket struct {
		h uint64
		i uint32
	}
	buckets := make([]bucket, 0, n)
	byHash := func(a, b bucket) int {
		if c := cmp.Compare(a.h, b.h); c != 0 {
			return c
		}
		return cmp.Compare(a.i, b.i)
	}
	for i, e := range ents {
		if !skip(e) {
			buckets = append(buckets, bucket{e.exact, uint32(i)})
		}
	}
	slices.SortFunc(buckets, byHash)
	for j := 1; j < len(buckets); j++ {
		if buckets[j].h == buckets[j-1].h {
			uf.union(buckets[j-1].i, buckets[j].i)
		}
	}
	if !d.near {
		return uf
	}
	sig := func(i uint32) []byte { return sigs[int(i)*d.numPerm : int(i+1)*d.numPerm] }
	bands, rows := lshParams(d.threshold, d.numPerm)
	var heads []uint32
	for b := range bands {
		buckets = buckets[:0]
		for i, e := range ents {
			if skip(e) || e.noSig {
				continue
			}
			h := uint64(fnvOffset)
			for _, v := range sig(uint32(i))[b*rows : (b+1)*rows] {
				h = (h ^ uint64(v)) * fnvPrime
			}
			buckets = append(buckets, bucket{h, uint32(i)})
		}
		slices.SortFunc(buckets, byHash)
		for j := 0; j < len(buckets); {
			k := j + 1
			for k < len(buckets) && buckets[k].h == buckets[j].h {
				k++
			}
			heads = heads[:0]
			for _, m := range buckets[j:k] {
				matched := false
				for _, h := range heads {
					if uf.find(h) == uf.find(m.i) {
						matched = true
					} else if similarity(sig(h), sig(m.i)) >= d.threshold {
						uf.union(h, m.i)
						matched = true
					}
					if matched {
						break
					}
				}
				if !matched && len(heads) < maxHeads {
					heads = append(heads, m.i)
				}
			}
			j = k
		}
	}
	return uf
}

// benchExample shows a contaminated prompt beside the benchmark line it
// shares an n-gram with, and the n-gram.
func (d *Dedupe) benchExample(reason string, rec *conv.Record, ref benchRef) stages.Example {
	ex := stages.Example{Reason: reason, Record: name(rec.Dataset, rec.Key, rec.Source), Match: d.bench.where(ref)}
	parts := promptText(rec)
	if _, at, length, ok := d.bench.match(wordHashes(nil, parts)); ok {
		ex.Text = strings.Join(wordsOf(parts)[at:at+length], " ")
	}
	return ex
}

// name shows a record as DATASET/KEY (file:line).
func name(dataset, key string, src conv.Source) string {
	s := dataset + "/" + key
	if src.File != "" && src.Line > 0 {
		s += fmt.Sprintf(" (%s:%d)", src.File, src.Line)
	}
	return s
}

// Report keeps the examples and flagged counts for status.
func (d *Dedupe) Report(s *stages.Report) {
	s.Examples, s.Flagged, s.Figures = d.examples, d.flagged, d.figures
	if len(s.Flagged) == 0 {
		s.Flagged = nil
	}
}
