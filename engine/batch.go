package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/internal/human"
	"github.com/eaglet-dev/eaglet/internal/outfile"
	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// runBatch reruns a batch stage when its configuration, its input or the
// file it wrote changed, replacing its output in one transaction.
func (r *runner) runBatch(ctx context.Context, pr *prepared, st stages.Batch, upstream []string, total int) *Result {
	n := pr.node
	started := time.Now()
	prev, err := r.store.GetInstance(n.ID)
	if err != nil {
		return r.fail(n, err)
	}
	digest, err := r.inputDigest(n)
	if err != nil {
		return r.fail(n, err)
	}
	d := decideBatch(prev, pr, r.opts.Force[n], digest)
	if !d.Runs() {
		r.prog.begin(n, 0, 0, 0)
		r.prog.finish(n, d.String())
		return &Result{Node: n, Outcome: UpToDate, Decision: d}
	}
	if _, remote := pr.stage.(stages.Remote); remote && r.opts.Dry {
		// Its work is requests: plan prices them with its Estimate.
		r.prog.begin(n, total, 0, 0)
		r.prog.finish(n, WouldRun.String())
		return &Result{Node: n, Outcome: WouldRun, Decision: d}
	}
	r.prog.begin(n, total, 0, 0)
	// Unfinished until its new output is in: a crash at any point below
	// makes the next run do it again.
	if _, err := r.markRunning(pr, started, prev); err != nil {
		return r.fail(n, err)
	}
	if err := start(pr.stage); err != nil {
		return r.fail(n, err)
	}
	bw, err := r.store.BeginBatch(n.ID)
	if err != nil {
		return r.fail(n, err)
	}
	in := &storeInput{store: r.store, ids: upstream, count: total}
	out := &batchOutput{bw: bw, in: in, fp: pr.fp, n: n, prog: r.prog, dropped: map[string]int{}}
	out.orderer, _ = pr.stage.(stages.Orderer)
	if err := st.Run(ctx, in, out); err != nil {
		bw.Rollback()
		if ctx.Err() != nil {
			r.prog.finish(n, "interrupted")
			return &Result{Node: n, Outcome: Interrupted, Decision: d}
		}
		return r.fail(n, err)
	}
	// A stage that read every copy (dedupe) accounted for each itself.
	if !in.copies {
		if err := r.reportCollapsed(pr, upstream, total, out.dropped); err != nil {
			bw.Rollback()
			return r.fail(n, err)
		}
	}
	// A key emitted twice is stored once (the first wins): the rest are duplicates.
	live, err := bw.Live()
	if err != nil {
		bw.Rollback()
		return r.fail(n, err)
	}
	if dup := out.count - live; dup > 0 {
		out.dropped["duplicate"] += dup
		out.count = live
		r.prog.duplicates(n, dup)
	}
	stats := state.Stats{Dropped: out.dropped, Config: json.RawMessage(pr.config)}
	report(pr.stage, &stats, pr.inst.Spec)
	// Still running until Finish is done, but its output is that of this
	// input: a kill in Finish (a handoff's launches) is a run stopped
	// early, not a changed input.
	running := &state.Instance{ID: n.ID, Stage: n.Stage.Spec.Name, Status: state.StatusRunning, Fingerprint: pr.fp, InputDigest: digest,
		StartedAt: started, Stats: stats}
	if err := bw.Commit(r.store, running); err != nil {
		return r.fail(n, err)
	}
	if fin, ok := pr.stage.(stages.Finisher); ok && !r.opts.Dry {
		if err := fin.Finish(ctx, &orderedInput{store: r.store, id: n.ID, count: out.count}); err != nil {
			return r.fail(n, err)
		}
		report(pr.stage, &stats, pr.inst.Spec)
	}
	// The writer hashed the output as it wrote it; reading it back is the fallback.
	if out, records, ok := bw.Digest(); ok {
		err = r.saveDoneAs(pr, started, prev, digest, out, records, stats)
	} else {
		err = r.saveDone(ctx, pr, started, prev, digest, stats)
	}
	if err != nil {
		return r.fail(n, err)
	}
	r.prog.finish(n, "")
	return &Result{Node: n, Outcome: Ran, Processed: out.count, Decision: d, Requests: stats.Requests, Figures: stats.Figures}
}

// reportCollapsed counts, as drops by reason, the records of one need that
// are identical to (have the key of) a record of another need: the stage
// reads them once, as the other's, so their dataset's weight does not
// apply to them. It says so in the log rather than collapsing them silently.
func (r *runner) reportCollapsed(pr *prepared, upstream []string, distinct int, dropped map[string]int) error {
	if len(upstream) < 2 {
		return nil
	}
	// Counting is cheap; finding which records are shared is not (a probe
	// per record), so it is done only when the counts say some are.
	sum := 0
	for _, id := range upstream {
		c, err := r.store.CountOutputs([]string{id})
		if err != nil {
			return err
		}
		sum += c
	}
	if sum == distinct {
		return nil
	}
	collapsed, err := r.store.Collapsed(upstream)
	if err != nil {
		return err
	}
	for _, c := range collapsed {
		dropped[fmt.Sprintf("identical to a record of %s (from %s)", c.Into, c.Instance)] += c.N
		if !r.opts.Dry {
			pr.inst.Log("%s of %s identical to records of %s, passed on once, as %s's; dedupe before generate to stop asking for them twice",
				human.Plural(c.N, "record"), c.Instance, c.Into, c.Into)
		}
	}
	return nil
}

// report copies what a stage tells of its run into the instance's stats.
// The files it wrote inside the spec's directory are kept relative to it:
// a project copied or moved elsewhere then checks its own files, not the
// ones at the old place.
func report(st stages.Stage, stats *state.Stats, spec *specs.Spec) {
	rep, ok := st.(stages.Reporter)
	if !ok {
		return
	}
	var r stages.Report
	rep.Report(&r)
	stats.Detected, stats.Skipped, stats.Copies = r.Detected, r.Skipped, r.Copies
	if r.Output != "" {
		stats.Output, stats.OutputHash = specRelative(spec, r.Output), r.OutputHash
	}
	stats.MoreOutputs = nil
	for path, hash := range r.MoreOutputs {
		if stats.MoreOutputs == nil {
			stats.MoreOutputs = map[string]string{}
		}
		stats.MoreOutputs[specRelative(spec, path)] = hash
	}
	stats.Flagged, stats.Figures, stats.Requests = r.Flagged, r.Figures, r.Requests
	stats.Examples = nil
	for _, e := range r.Examples {
		stats.Examples = append(stats.Examples, state.Example(e))
	}
}

// batchUpToDate reports whether a batch instance's stored output still
// holds: same configuration, same input, and its output file untouched.
func batchUpToDate(prev *state.Instance, spec *specs.Spec, fp, digest string) bool {
	if prev == nil || prev.Status != state.StatusDone || prev.Fingerprint != fp || prev.InputDigest != digest {
		return false
	}
	return changedOutput(prev, spec) == ""
}

// changedOutput names a file the instance wrote that is missing or was
// changed since, or is "" when every one is as it was written. A stored
// absolute path outside the spec's directory, where a spec that does not
// allow_outside writes nothing, was written before the project was moved
// or copied (such paths are now stored relative; older stores kept them
// absolute): it is not this project's file, so it counts as missing.
func changedOutput(prev *state.Instance, spec *specs.Spec) string {
	files := map[string]string{}
	if prev.Stats.Output != "" {
		files[spec.Resolve(prev.Stats.Output)] = prev.Stats.OutputHash
	}
	for path, hash := range prev.Stats.MoreOutputs {
		files[spec.Resolve(path)] = hash
	}
	for _, path := range slices.Sorted(maps.Keys(files)) {
		if h, err := outfile.Stamp(path); err != nil || h != files[path] || checkInside(spec, path) != nil {
			return path
		}
	}
	return ""
}

// specRelative is path relative to the spec's directory when it is
// inside it, else path as it is.
func specRelative(spec *specs.Spec, path string) string {
	dir, err := filepath.Abs(filepath.Dir(spec.Path))
	if err != nil {
		return path
	}
	rel, err := filepath.Rel(dir, path)
	if err != nil || !filepath.IsAbs(path) || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return path
	}
	return rel
}

// storeInput reads the live output of a node's needs.
type storeInput struct {
	store *state.Store
	ids   []string
	count int
	// cur is the row being visited, so Keep can reference it without a copy.
	cur state.Row
	// copies is set once the stage has read every copy of shared keys.
	copies bool
	// keyOnly is set while EachKey visits rows without their records.
	keyOnly bool
}

func (in *storeInput) Count() int { return in.count }

func (in *storeInput) Each(ctx context.Context, fn func(*conv.Record) error) error {
	return in.store.EachOutput(ctx, in.ids, in.visit(fn))
}

// EachKey is Each showing keys alone (stages.KeyInput): the rows are read
// without their records, and Keep takes what it stores from the row.
func (in *storeInput) EachKey(ctx context.Context, fn func(key, dataset string) error) error {
	in.keyOnly = true
	defer func() { in.keyOnly = false }()
	return in.store.EachOutputRef(ctx, in.ids, func(row state.Row) error {
		in.cur = row
		return fn(row.Key, row.Dataset)
	})
}

// EachCopy is Each showing every copy of a key that several needs hold
// (stages.CopyInput).
func (in *storeInput) EachCopy(ctx context.Context, fn func(*conv.Record) error) error {
	in.copies = true
	return in.store.EachCopy(ctx, in.ids, in.visit(fn))
}

// visit decodes each row for fn and remembers it for Keep.
func (in *storeInput) visit(fn func(*conv.Record) error) func(state.Row) error {
	return func(row state.Row) error {
		rec, err := decodeRow(row)
		if err != nil {
			return err
		}
		rec.Key = row.Key
		in.cur = row
		return fn(rec)
	}
}

// orderedInput reads a node's own committed output in Order order.
type orderedInput struct {
	store *state.Store
	id    string
	count int
}

func (in *orderedInput) Count() int { return in.count }

func (in *orderedInput) Each(ctx context.Context, fn func(*conv.Record) error) error {
	return in.store.EachOrdered(ctx, in.id, func(row state.Row) error {
		rec, err := decodeRow(row)
		if err != nil {
			return err
		}
		rec.Key = row.Key
		return fn(rec)
	})
}

// batchOutput writes a batch stage's results into the open transaction.
type batchOutput struct {
	bw      *state.BatchWriter
	in      *storeInput
	fp      string
	n       *Node
	prog    *progress
	orderer stages.Orderer
	dropped map[string]int
	count   int
	// data and content marshal an emitted record and what its content
	// hash hashes; the writer copies the record's bytes as it is put.
	data, content recordJSON
}

func (o *batchOutput) Emit(rec *conv.Record) error {
	data, err := o.data.marshal(rec)
	if err != nil {
		return fmt.Errorf("encode %s: %w", rec.Key, err)
	}
	it := state.Item{Key: rec.Key, FP: o.fp, Data: data, OutHash: hashBytes(data), Chash: o.content.contentHash(rec)}
	return o.put(rec, it)
}

func (o *batchOutput) Keep(rec *conv.Record) error {
	if rec.Key != o.in.cur.Key {
		return fmt.Errorf("stage %s kept record %s outside of its input's Each", o.n.ID, rec.Key)
	}
	it := state.Item{Key: rec.Key, FP: o.fp, InHash: o.in.cur.Hash, OutHash: o.in.cur.Hash, Origin: o.in.cur.Origin, Chash: o.in.cur.Chash}
	if o.in.keyOnly {
		// The record was not read: what put takes from it, its row says
		// (every done row stores its record's tokens).
		it.Status = int(stages.Done)
		it.PromptTokens, it.CompletionTokens = o.in.cur.PromptTokens, o.in.cur.CompletionTokens
		if o.n.Dataset == nil {
			it.Dataset = o.in.cur.Dataset
		}
		if o.orderer != nil {
			it.Ord = o.orderer.Order(rec)
		}
		return o.store(it)
	}
	return o.put(rec, it)
}

func (o *batchOutput) put(rec *conv.Record, it state.Item) error {
	it.Status = int(stages.Done)
	it.PromptTokens, it.CompletionTokens = tokens(rec)
	if o.n.Dataset == nil {
		it.Dataset = rec.Dataset
	}
	if o.orderer != nil {
		it.Ord = o.orderer.Order(rec)
	}
	return o.store(it)
}

// store counts an output record and hands it to the writer.
func (o *batchOutput) store(it state.Item) error {
	o.count++
	o.prog.add(o.n, it)
	return o.bw.Put(it)
}

// Settle leaves out, as the writer writes them, the records keep rejects,
// and counts them as dropped rather than passed on.
func (o *batchOutput) Settle(keep func(key string) bool, reason string) {
	o.bw.Only(func(it *state.Item) bool {
		if keep(it.Key) {
			return true
		}
		o.count--
		o.dropped[reason]++
		o.prog.settled(o.n, *it)
		return false
	})
}

func (o *batchOutput) Drop(reason string) {
	o.dropped[reason]++
	o.prog.add(o.n, state.Item{Status: int(stages.Dropped)})
}
