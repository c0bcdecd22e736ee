package engine

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"sync"
	"time"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

const (
	commitEvery = 1024
	commitAfter = 100 * time.Millisecond
)

type job struct {
	row state.Row
	// unanswered says the store held no answer to the row's content when
	// the row was fed (lookAhead): it needs no look-up of its own.
	unanswered bool
}

// lookPage is how many fed records share one look-up of earlier answers:
// each look-up reads its index pages from the file again (the store
// changed since), so more records a look-up cost less a record.
const lookPage = 512

type outcome struct {
	item state.Item
	err  error // set when the stage could not run the record at all
}

// countPending is the store's CountPending, except for an instance of a
// stage that reuses no answers, reading one upstream instance, that holds
// no outcome yet: all of its input is pending, which total already counts,
// and reading the input to count it again, probing earlier answers for
// each record, was 2% of a first run of load, cap, filter and merge.
func (r *runner) countPending(inst string, upstream []string, fp string, total int, reuses bool) (state.Pending, error) {
	if !reuses && len(upstream) == 1 {
		had, err := r.store.HasItems(inst)
		if err != nil {
			return state.Pending{}, err
		}
		if !had {
			return state.Pending{Records: total}, nil
		}
	}
	return r.store.CountPending(inst, upstream, fp)
}

// runMapper brings an item stage's output up to date with its input: it
// keeps every outcome that is still valid, processes the rest with
// pr.concurrency workers, and commits outcomes in batches as they finish.
func (r *runner) runMapper(ctx context.Context, pr *prepared, st stages.Mapper, upstream []string, total int) *Result {
	n := pr.node
	started := time.Now()
	prev, err := r.store.GetInstance(n.ID)
	if err != nil {
		return r.fail(n, err)
	}
	force := r.opts.Force[n]
	if force {
		if err := r.store.Invalidate(n.ID); err != nil {
			return r.fail(n, err)
		}
	}
	// Outcomes already matched against this very input under this
	// configuration need not be matched again: at a million records that
	// takes seconds, and a resumed run should be asking within them.
	digest, err := r.finishedInputDigest(n)
	if err != nil {
		return r.fail(n, err)
	}
	settled := !force && digest != "" && prev != nil && prev.Fingerprint == pr.fp && prev.InputDigest == digest
	if !settled {
		if prev != nil && prev.InputDigest != "" {
			// A crash while matching must not leave the claim that it is done.
			unmatched := *prev
			unmatched.InputDigest = ""
			if err := r.store.PutInstance(&unmatched); err != nil {
				return r.fail(n, err)
			}
		}
		if err := r.store.Reconcile(n.ID, upstream, pr.fp); err != nil {
			return r.fail(n, err)
		}
	}
	costly, isCostly := st.(stages.Costly)
	rationed, _ := st.(stages.Rationed)
	// Answers to reuse: none can be new when no other instance ran since
	// this one last looked (quiet). Otherwise (a first run, a changed
	// input, a run of several datasets killed, a sibling that finished
	// after this one started) each record looks when it is dispatched,
	// one indexed probe beside its request, rather than every pending
	// record before the first request: that and counting the input take
	// seconds at a million. A rationed stage (a budget) and plan look for
	// all of them first: the budget must keep what is paid for before it
	// spends on new requests, and plan shows the figures.
	var lastLook int64 // when this instance last looked for every pending record
	if prev != nil {
		lastLook = prev.Stats.Settled
	}
	quiet := settled && r.quietSince(n, lastLook)
	lookForReuse := isCostly && !force && !quiet && (r.opts.Dry || rationed != nil && rationed.Rationed())
	pr.reuseAtDispatch = isCostly && !force && !quiet && !lookForReuse
	// Counting what is pending from the input reads every input record
	// (seconds at a million): done when plan needs the figures or answers
	// are looked for. Otherwise the outcomes now match the input, so it is
	// counted from them: at once when the instance may be up to date, in
	// the background while it dispatches when it was stopped.
	doneBefore := prev != nil && prev.Status == state.StatusDone
	counted := r.opts.Dry || lookForReuse || doneBefore || !settled && !isCostly
	var todo state.Pending
	var countLater func() ([]state.Count, error)
	switch {
	case lookForReuse || !settled && (r.opts.Dry || !isCostly):
		todo, err = r.countPending(n.ID, upstream, pr.fp, total, isCostly)
	case counted:
		todo.Records, err = r.pendingSettled(n.ID, total)
	default:
		countLater, err = r.store.CountsNow(n.ID)
	}
	if err != nil {
		return r.fail(n, err)
	}
	pending := todo.Records
	d := decideMapper(prev, pr, force, pending, total)
	if counted && pending == 0 && doneBefore && prev.Fingerprint == pr.fp {
		// Reconcile may have set outcomes aside (a lowered cap): refresh the digest.
		if err := r.saveDone(ctx, pr, started, prev, digest, state.Stats{Settled: started.UnixNano()}); err != nil {
			return r.fail(n, err)
		}
		d = Decision{Action: Skip}
		r.prog.begin(n, 0, 0, 0)
		r.prog.finish(n, d.String())
		return &Result{Node: n, Outcome: UpToDate, Decision: d}
	}
	if counted {
		kept, err := r.store.CountOutputs([]string{n.ID})
		if err != nil {
			return r.fail(n, err)
		}
		r.prog.begin(n, total, total-pending, kept)
	} else {
		r.prog.begin(n, total, 0, 0)
	}
	running, err := r.markRunning(pr, started, prev)
	if err != nil {
		return r.fail(n, err)
	}
	if err := start(pr.stage); err != nil {
		return r.fail(n, err)
	}

	reused := 0
	if isCostly {
		r.flights.started(pr.fp)
	}
	if lookForReuse && todo.Reusable > 0 {
		if reused, err = r.reuseAll(ctx, pr, costly, upstream); err != nil {
			return r.fail(n, err)
		}
	}
	r.settling.settle(n)
	// From here every pending record has been looked for among earlier
	// answers and the outcomes match the input: a next run that finds
	// neither changed starts dispatching at once. Records that look when
	// dispatched have not all looked yet: the time of the last complete
	// look stands, so a next run looks again for what this one leaves.
	running.InputDigest, running.Stats.Settled = digest, started.UnixNano()
	if pr.reuseAtDispatch {
		running.Stats.Settled = lastLook
	}
	if err := r.store.PutInstance(running); err != nil {
		return r.fail(n, err)
	}
	counting := make(chan struct{})
	go func() {
		defer close(counting)
		if countLater == nil {
			return
		}
		if counts, err := countLater(); err == nil {
			already, kept := alreadyDone(counts)
			r.prog.counted(n, already, kept)
		}
	}()
	if r.opts.Dry && isCostly && pending > reused {
		// What is left costs requests: plan counts it rather than doing
		// it, once per content however many instances of the run ask.
		fresh := 0
		err := r.store.EachPending(ctx, n.ID, upstream, pr.fp, func(row state.Row) error {
			if row.Chash == "" || r.planned.claim(flightKey(pr.fp, row.Chash)) {
				fresh++
			}
			return nil
		})
		if err != nil {
			return r.fail(n, err)
		}
		r.prog.finish(n, WouldRun.String())
		return &Result{Node: n, Outcome: WouldRun, Decision: d, Reused: reused, Shared: pending - reused - fresh, Pending: fresh}
	}

	r.settling.wait(ctx, n, r.prog.logger(n))
	// Cost follows the work, not the number in the spec.
	work := pending
	if !counted {
		work = total
	}
	var c runCounts
	var commitErr error
	if _, ok := st.(stages.Pure); ok {
		c, commitErr, err = r.pass(ctx, pr, st, upstream)
	} else {
		c, commitErr, err = r.dispatch(ctx, pr, st, upstream, work)
	}
	<-counting
	if !counted {
		// What was fed is what was pending, unless the run stopped early.
		d = decideMapper(prev, pr, force, c.processed, total)
	}
	res := &Result{Node: n, Processed: c.processed + reused, Failed: c.failed, Reused: reused + c.reused, Decision: d,
		Requests: c.requests, Retries: c.retries}
	if isCostly {
		// Tokens are made where requests are sent; a filter passing them
		// on makes none.
		res.PromptTokens, res.CompletionTokens = c.prompt, c.completion
	}
	if sp, ok := st.(stages.Spender); ok {
		res.Dollars = sp.Spent()
	}
	// A stop that came once every record had its outcome (the last answers
	// in flight finished meanwhile) leaves nothing to do: the instance is
	// done, not incomplete, and is saved so even though the run is ending.
	stopped := ctx.Err() != nil
	allDone := counted && c.processed == pending-reused
	switch {
	case commitErr != nil:
		return r.fail(n, commitErr)
	case stopped && !allDone:
		// Records given up on when the stop came are left for the next run.
		running.Seconds += time.Since(started).Seconds()
		r.store.PutInstance(running)
		res.Outcome = Interrupted
		r.prog.finish(n, "interrupted; committed what finished")
		return res
	case err != nil && !(stopped && errors.Is(err, context.Canceled)):
		return r.fail(n, err)
	}
	ctx = context.WithoutCancel(ctx)
	stats := state.Stats{Settled: running.Stats.Settled}
	if c.digest != nil {
		// The pass saw the whole output written: no need to read it back.
		out, records := c.digest.Sum()
		err = r.saveDoneAs(pr, started, prev, digest, out, records, stats)
	} else {
		err = r.saveDone(ctx, pr, started, prev, digest, stats)
	}
	if err != nil {
		return r.fail(n, err)
	}
	res.Outcome = Ran
	if c.processed+reused == c.skipped {
		// Nothing changed: only records a spent budget skips again, which
		// plan calls up to date as well.
		res.Outcome = UpToDate
	}
	r.prog.finish(n, "")
	return res
}

// dispatch processes the pending records with pr.concurrency workers (at
// most work of them) and commits their outcomes as they finish
// (commitLoop); feedErr is what stopped the reading of pending records.
func (r *runner) dispatch(ctx context.Context, pr *prepared, st stages.Mapper, upstream []string, work int) (c runCounts, commitErr, feedErr error) {
	// Workers finish what they started even after an interrupt: a record
	// half-generated is money spent, so only dispatch stops.
	workCtx := stages.WithStop(context.WithoutCancel(ctx), ctx.Done())
	jobs := make(chan job)
	// No more workers than records to do, and a result buffer of one
	// commit batch at most.
	nWorkers := min(pr.concurrency, max(work, 1))
	results := make(chan outcome, min(nWorkers, commitEvery))
	var workers sync.WaitGroup
	for range nWorkers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for j := range jobs {
				results <- r.process(workCtx, pr, st, j)
			}
		}()
	}

	fed := make(chan error, 1)
	go func() {
		sendJob := func(j job) error {
			select {
			case jobs <- j:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		send := func(row state.Row) error { return sendJob(job{row: row}) }
		flush := func() error { return nil }
		if pr.reuseAtDispatch {
			send, flush = r.lookAhead(ctx, pr.fp, sendJob)
		}
		var err error
		if p, ok := st.(stages.Prioritizer); ok && p.Prioritize() {
			err = r.eachByPriority(ctx, pr.node.ID, upstream, pr.fp, p, send)
		} else {
			err = r.store.EachPending(ctx, pr.node.ID, upstream, pr.fp, send)
		}
		if err == nil {
			err = flush()
		}
		close(jobs)
		workers.Wait()
		close(results)
		fed <- err
	}()

	c, commitErr = r.commitLoop(pr.node, results)
	return c, commitErr, <-fed
}

// runCounts is what a pass over an instance's records did.
type runCounts struct {
	processed, failed, skipped, requests, reused int
	retries                                      map[string]int
	// prompt and completion count the tokens of new done outcomes.
	prompt, completion int64
	// digest, when set, is the output digest of the instance, every row
	// of which this pass wrote.
	digest *state.Digester
}

// commitLoop stores outcomes in batches as they arrive, so a crash loses
// only the answers in flight and those received in the last commitAfter,
// plus the commit under way. A batch is sealed when its oldest outcome is
// commitAfter old or it holds commitEvery; it is written by a goroutine of
// its own, so outcomes keep arriving while a commit runs and the next
// batch is whatever came in meanwhile (group commit): a slow commit then
// delays the next by its own length, not by another window. Receiving
// pauses only when a full batch waits for the commit under way, which
// bounds memory when the store is slower than the answers.
func (r *runner) commitLoop(n *Node, results <-chan outcome) (c runCounts, err error) {
	var (
		batch   []state.Item
		due     bool // the batch is sealed: commit it as soon as the writer is free
		writing []state.Item
		timer   = time.NewTimer(commitAfter)
		todo    = make(chan []state.Item)
		done    = make(chan error)
	)
	timer.Stop()
	defer timer.Stop()
	go func() {
		for b := range todo {
			done <- r.store.Commit(n.ID, b)
		}
	}()
	defer close(todo)
	start := func() {
		if writing != nil || len(batch) == 0 {
			return
		}
		if err != nil {
			batch, due = batch[:0], false // a failed store takes no more
			return
		}
		writing, batch, due = batch, nil, false
		timer.Stop()
		todo <- writing
	}
	in := results
	for in != nil || writing != nil || len(batch) > 0 {
		// A full batch waiting for the writer stops the receiving.
		recv := in
		if writing != nil && len(batch) >= commitEvery {
			recv = nil
		}
		select {
		case o, ok := <-recv:
			if !ok {
				in, due = nil, true
				start()
				continue
			}
			if o.err != nil {
				continue // interrupted before it ran; left for the next run
			}
			c.add(o.item)
			if len(batch) == 0 && !due {
				timer.Reset(commitAfter)
			}
			batch = append(batch, o.item)
			if len(batch) >= commitEvery {
				due = true
			}
			if due {
				start()
			}
		case <-timer.C:
			due = true
			start()
		case werr := <-done:
			if werr != nil && err == nil {
				err = werr
			}
			if werr == nil {
				r.flights.forget(writing)
				for _, it := range writing {
					r.prog.add(n, it)
				}
			}
			writing = nil
			if due || in == nil {
				start()
			}
		}
	}
	return c, err
}

func (c *runCounts) add(it state.Item) {
	c.processed++
	if it.Reused {
		c.reused++
	}
	c.requests += it.Requests
	for k, v := range state.ParseRetries(it.Retries) {
		if c.retries == nil {
			c.retries = map[string]int{}
		}
		c.retries[k] += v
	}
	switch stages.Status(it.Status) {
	case stages.Done:
		// An answer reused as it was dispatched cost this run nothing.
		if !it.Reused {
			c.prompt += int64(it.PromptTokens)
			c.completion += int64(it.CompletionTokens)
		}
	case stages.Failed:
		c.failed++
	case stages.Skipped:
		c.skipped++
	}
}

// lookAhead returns a feed that gathers rows into pages of lookPage and
// asks the store once a page which of their contents already has an answer
// (state.ReusableAmong), then hands each row to send marked with what it
// found, and the flush that sends the last page. Answers to the contents a
// page did not find can only come later from this run, which the flights
// and the look-up at dispatch of a fingerprint shared with another
// instance cover.
func (r *runner) lookAhead(ctx context.Context, fp string, send func(job) error) (feed func(state.Row) error, flush func() error) {
	page := make([]state.Row, 0, lookPage)
	chashes := make([]string, 0, lookPage)
	flush = func() error {
		if len(page) == 0 {
			return nil
		}
		chashes = chashes[:0]
		for _, row := range page {
			if row.Chash != "" {
				chashes = append(chashes, row.Chash)
			}
		}
		found, err := r.store.ReusableAmong(ctx, fp, chashes)
		if err != nil {
			return err
		}
		for i, row := range page {
			page[i] = state.Row{}
			// A row stored before schema 5 has no content hash yet: it
			// looks for itself once its hash is made.
			if err := send(job{row: row, unanswered: row.Chash != "" && !found[row.Chash]}); err != nil {
				return err
			}
		}
		page = page[:0]
		return nil
	}
	feed = func(row state.Row) error {
		page = append(page, row)
		if len(page) == lookPage {
			return flush()
		}
		return nil
	}
	return feed, flush
}

// process runs one record, fed with what its feed learnt of it
// (job.unanswered), through the stage and turns the result into the row
// to store.
func (r *runner) process(ctx context.Context, pr *prepared, st stages.Mapper, j job) outcome {
	row := j.row
	it := state.Item{Key: row.Key, FP: pr.fp, InHash: row.Hash}
	rec, err := decodeRow(row)
	if err != nil {
		it.Status, it.Reason = int(stages.Failed), err.Error()
		return outcome{item: it}
	}
	it.PromptTokens, it.CompletionTokens = tokens(rec)
	if pr.node.Dataset == nil {
		it.Dataset = rec.Dataset
	}
	if costly, ok := st.(stages.Costly); ok {
		if it.InChash = row.Chash; it.InChash == "" {
			it.InChash = contentHash(rec) // a row stored before schema 5
		}
		if !r.opts.Force[pr.node] {
			f, leader := r.flights.join(flightKey(pr.fp, it.InChash))
			if !leader {
				// Another instance is asking for this content: share its answer.
				<-f.done
				if f.data != nil {
					if o, ok := reuseData(ctx, costly, f.data, rec, it, true); ok {
						return o
					}
				}
			} else {
				o := r.processOnce(ctx, pr, costly, st, j, rec, it)
				f.finish(o.item)
				return o
			}
		}
	}
	return r.processRecord(ctx, pr, st, row, rec, it)
}

// processOnce leads a flight: an answer committed since the run began
// (by another instance whose flight is over) is reused, else it asks.
func (r *runner) processOnce(ctx context.Context, pr *prepared, c stages.Costly, st stages.Mapper, j job, rec *conv.Record, it state.Item) outcome {
	row := j.row
	if !r.flights.shared(pr.fp) && (!pr.reuseAtDispatch || j.unanswered) {
		// No other instance of the run answers under this fingerprint:
		// the store was searched before dispatch (all of it, or this
		// record's page as it was fed), and only this instance adds to
		// it since.
		return r.processRecord(ctx, pr, st, row, rec, it)
	}
	found, err := r.store.ReusableOutcome(ctx, pr.fp, it.InChash)
	if err == nil && found != nil {
		if o, ok := reuseData(ctx, c, found.Data, rec, it, true); ok {
			return o
		}
	}
	return r.processRecord(ctx, pr, st, row, rec, it)
}

// reuseData makes the outcome of an earlier answer's record, with the
// record's own provenance, as the stage decides: kept (reused) or skipped
// for its budget, waiting for room as Costly.Reuse says. It is false when
// the data cannot be read.
func reuseData(ctx context.Context, c stages.Costly, data []byte, rec *conv.Record, it state.Item, wait bool) (outcome, bool) {
	var prev conv.Record
	if json.Unmarshal(data, &prev) != nil {
		return outcome{}, false
	}
	prev.Key, prev.Dataset, prev.Source = rec.Key, rec.Dataset, rec.Source
	out, err := c.Reuse(ctx, &prev, wait)
	switch {
	case err != nil && ctx.Err() != nil:
		// The run is ending: the record stays to do.
		return outcome{err: err}, true
	case err != nil:
		it.Status, it.Reason = int(stages.Failed), err.Error()
		return outcome{item: it}, true
	case out.Status != stages.Done:
		it.Status, it.Reason = int(out.Status), out.Reason
		return outcome{item: it}, true
	}
	it.Status, it.Reused = int(stages.Done), true
	return encodeOutcome(it, &prev), true
}

// processRecord hands the record to the stage.
func (r *runner) processRecord(ctx context.Context, pr *prepared, st stages.Mapper, row state.Row, rec *conv.Record, it state.Item) outcome {
	out, err := st.Process(ctx, rec)
	if err != nil {
		if errors.Is(err, stages.ErrInterrupted) || (errors.Is(err, context.Canceled) && ctx.Err() != nil) {
			return outcome{err: err}
		}
		it.Status, it.Reason = int(stages.Failed), pr.inst.Spec.Redact(err.Error())
		return outcome{item: it}
	}
	it.Status, it.Reason = int(out.Status), pr.inst.Spec.Redact(out.Reason)
	it.Requests, it.Retries = out.Requests, state.FormatRetries(out.Retries)
	if out.Status != stages.Done {
		return outcome{item: it}
	}
	if out.Record == nil {
		it.OutHash, it.Origin, it.Chash = row.Hash, row.Origin, row.Chash
		return outcome{item: it}
	}
	out.Record.Key = row.Key
	return encodeOutcome(it, out.Record)
}

// reuseAll settles, before anything is dispatched, every pending record
// whose content already has a done outcome under this fingerprint (moved,
// renamed, reordered, in another dataset, or an option set back) and that
// the stage keeps (its budget has room): the earlier answer is stored with
// the record's current provenance. It returns how many it reused; the rest
// are left to the run.
func (r *runner) reuseAll(ctx context.Context, pr *prepared, c stages.Costly, upstream []string) (int, error) {
	n := pr.node
	var batch []state.Item
	reused := 0
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := r.store.Commit(n.ID, batch); err != nil {
			return err
		}
		for _, it := range batch {
			r.prog.add(n, it)
		}
		reused += len(batch)
		batch = batch[:0]
		return nil
	}
	err := r.store.EachPending(ctx, n.ID, upstream, pr.fp, func(row state.Row) error {
		if row.Chash == "" {
			return nil
		}
		found, err := r.store.ReusableOutcome(ctx, pr.fp, row.Chash)
		if err != nil || found == nil {
			return err
		}
		rec, err := decodeRow(row)
		if err != nil {
			return nil // processing reports it
		}
		rec.Key = row.Key
		it := state.Item{Key: row.Key, FP: pr.fp, InHash: row.Hash, InChash: row.Chash}
		if n.Dataset == nil {
			it.Dataset = rec.Dataset
		}
		o, ok := reuseData(ctx, c, found.Data, rec, it, false)
		if !ok || o.err != nil || o.item.Status != int(stages.Done) {
			return nil // unreadable or over the budget: the run decides
		}
		batch = append(batch, o.item)
		if len(batch) >= commitEvery {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	return reused, err
}

// encodeOutcome stores rec as the item's own data.
func encodeOutcome(it state.Item, rec *conv.Record) outcome {
	data, err := json.Marshal(rec)
	if err != nil {
		it.Status, it.Reason = int(stages.Failed), "encode output: "+err.Error()
		return outcome{item: it}
	}
	it.Data, it.OutHash, it.Chash = data, hashBytes(data), contentHash(rec)
	it.PromptTokens, it.CompletionTokens = tokens(rec)
	if g := rec.Generation; g != nil {
		it.Finish = g.FinishReason
		if t := g.Timing; t != nil {
			it.Sent, it.FirstToken, it.Finished, it.URL = t.Sent, t.FirstToken, t.Finished, t.URL
		}
	}
	return outcome{item: it}
}

// eachByPriority visits pending records highest priority first. Only keys
// and priorities are held in memory (about 60 bytes a record); records are
// read back from the store in batches as they are dispatched.
func (r *runner) eachByPriority(ctx context.Context, inst string, upstream []string, fp string, p stages.Prioritizer, fn func(state.Row) error) error {
	type ranked struct {
		key      string
		priority float64
	}
	var all []ranked
	err := r.store.EachPending(ctx, inst, upstream, fp, func(row state.Row) error {
		rec, err := decodeRow(row)
		if err != nil {
			return err
		}
		all = append(all, ranked{row.Key, p.Priority(rec)})
		return nil
	})
	if err != nil {
		return err
	}
	sort.SliceStable(all, func(i, j int) bool { return all[i].priority > all[j].priority })
	const batch = 500
	for start := 0; start < len(all); start += batch {
		part := all[start:min(start+batch, len(all))]
		keys := make([]string, len(part))
		for i, k := range part {
			keys[i] = k.key
		}
		rows := make(map[string]state.Row, len(part))
		if err := r.store.EachByKey(ctx, upstream, keys, func(row state.Row) error {
			if _, dup := rows[row.Key]; !dup {
				rows[row.Key] = row
			}
			return nil
		}); err != nil {
			return err
		}
		for _, k := range keys {
			if row, ok := rows[k]; ok {
				if err := fn(row); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
