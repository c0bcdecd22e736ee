package engine

import (
	"context"
	"errors"

	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// passFlush is how many outcomes of a Pure stage one transaction stores:
// a few milliseconds of the writer, so other instances' commits barely
// wait, and a kill loses at most that much cheap work.
const passFlush = 2048

// pass runs a Pure stage over its pending records in key order in this
// goroutine and stores the outcomes in another, passFlush to a
// transaction (state.CommitOutcomes). For a stage that decides a record
// in a microsecond, dispatching each record to a worker through channels
// and committing 256 outcomes at a time with every column bound cost
// more than the stage. What pass stores is what dispatch would: one
// outcome per record, committed whole, so a killed pass resumes with the
// records left.
func (r *runner) pass(ctx context.Context, pr *prepared, st stages.Mapper, upstream []string) (c runCounts, commitErr, feedErr error) {
	n := pr.node
	// An instance with no row before the pass holds, after it, the
	// outcomes decided here, in key order: their digest is its output's.
	had, err := r.store.HasItems(n.ID)
	if err != nil {
		return c, nil, err
	}
	if !had {
		c.digest = state.NewDigester()
	}
	batches := make(chan []state.Item, 1)
	failed := make(chan struct{}) // closed when a commit fails
	committed := make(chan error, 1)
	go func() {
		defer close(committed)
		for batch := range batches {
			if err := r.store.CommitOutcomes(n.ID, batch); err != nil {
				committed <- err
				close(failed)
				return
			}
			for _, it := range batch {
				r.prog.add(n, it)
			}
		}
	}()
	send := func(batch []state.Item) error {
		select {
		case batches <- batch:
			return nil
		case <-failed:
			return errCommitFailed
		}
	}
	// As for workers, a record begun is finished after an interrupt; only
	// the reading of records stops.
	workCtx := stages.WithStop(context.WithoutCancel(ctx), ctx.Done())
	batch := make([]state.Item, 0, passFlush)
	// With no outcome stored every input record is pending: reading the
	// input alone spares a probe of the instance's rows per record.
	each := func(fn func(state.Row) error) error { return r.store.EachPending(ctx, n.ID, upstream, pr.fp, fn) }
	if !had {
		each = func(fn func(state.Row) error) error { return r.store.EachOutput(ctx, upstream, fn) }
	}
	feedErr = each(func(row state.Row) error {
		o := r.process(workCtx, pr, st, job{row: row})
		if o.err != nil {
			return nil // interrupted before it ran; left for the next run
		}
		c.add(o.item)
		if c.digest != nil && o.item.Status == int(stages.Done) {
			c.digest.Add(o.item.Key, o.item.OutHash)
		}
		if batch = append(batch, o.item); len(batch) == passFlush {
			err := send(batch)
			batch = make([]state.Item, 0, passFlush)
			return err
		}
		return nil
	})
	// What was processed before an interrupt is kept, as dispatch keeps
	// what its workers finish.
	if len(batch) > 0 && !errors.Is(feedErr, errCommitFailed) {
		if err := send(batch); err != nil && feedErr == nil {
			feedErr = err
		}
	}
	close(batches)
	return c, <-committed, feedErr
}

// errCommitFailed stops a pass's reading once its writer has failed; the
// writer's error is the one reported.
var errCommitFailed = errors.New("an earlier commit failed")
