package engine

import (
	"fmt"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/human"
	"github.com/eaglet-dev/eaglet/stages"
)

// UnfinishedError says an instance did not start because instances it
// needs failed, were blocked or were interrupted.
type UnfinishedError struct {
	// Needs names every unfinished need, so they are fixed at once.
	Needs []string
}

// Error names the needs: "load[a], load[b] did not finish".
func (e *UnfinishedError) Error() string { return strings.Join(e.Needs, ", ") + " did not finish" }

// PartialInputError says a stage that writes a file did not, since
// records upstream failed: writing would replace the file with one
// missing them.
type PartialInputError struct {
	// Failed counts the failed records of each instance upstream that has
	// some, in the order the pipeline runs them.
	Failed []FailedRecords
	// Err is why they could not be counted, when they could not.
	Err error
}

// FailedRecords counts the failed records of one instance.
type FailedRecords struct {
	Instance string
	N        int
}

// Error says what was not written and what to do about it.
func (e *PartialInputError) Error() string {
	if e.Err != nil {
		return "not written: " + e.Err.Error()
	}
	parts := make([]string, len(e.Failed))
	for i, f := range e.Failed {
		parts[i] = fmt.Sprintf("%s has %s", f.Instance, human.Plural(f.N, "failed record"))
	}
	return "not written: " + strings.Join(parts, ", ") + "; run again to retry them, or pass --allow-partial to write what there is"
}

// unlessRetried is what plan says of a stage that writes a file over
// these failed records: the run retries them first, and whether they
// succeed decides whether it writes. The counts are as the store holds
// them; a changed option may send all of them anew.
func (e *PartialInputError) unlessRetried() string {
	parts := make([]string, len(e.Failed))
	for i, f := range e.Failed {
		parts[i] = fmt.Sprintf("%d in %s", f.N, f.Instance)
	}
	return "not written if records upstream fail again, as " + strings.Join(parts, " and ") + " did; --allow-partial writes what there is"
}

// Unwrap is why the failed records could not be counted, or nil.
func (e *PartialInputError) Unwrap() error { return e.Err }

// block decides whether n is kept from starting: unfinished names the
// needs that did not finish; a stage that writes a file also waits for
// the records that failed upstream. nil lets it start.
func (r *runner) block(n *Node, unfinished []string) *Decision {
	if len(unfinished) > 0 {
		return &Decision{Action: Block, Reason: NeedsUnfinished, Err: &UnfinishedError{Needs: unfinished}}
	}
	// A dry run cannot tell whether failed records will succeed when
	// retried, so it leaves the question to the run.
	if r.opts.AllowPartial || r.opts.Dry {
		return nil
	}
	if partial := r.partialInputs(n); partial != nil {
		return &Decision{Action: Block, Reason: NeedsFailedRecords, Err: partial}
	}
	return nil
}

// partialInputs finds, for a stage that writes a file, the instances it
// depends on (at any distance) whose records failed; nil when there are
// none or n writes no file.
func (r *runner) partialInputs(n *Node) *PartialInputError {
	if _, writes := n.Stage.Options.(stages.FileWriter); !writes {
		return nil
	}
	e := &PartialInputError{}
	for _, up := range r.p.Ancestors(n.Needs) {
		if _, ok := r.batches.Load(up); ok {
			continue // a batch stage stores done records alone
		}
		counts, err := r.store.Counts(up.ID)
		if err != nil {
			return &PartialInputError{Err: fmt.Errorf("cannot read %s: %w", up.ID, err)}
		}
		failed := 0
		for _, c := range counts {
			if c.Status == int(stages.Failed) {
				failed += c.N
			}
		}
		if failed > 0 {
			e.Failed = append(e.Failed, FailedRecords{Instance: up.ID, N: failed})
		}
	}
	if len(e.Failed) == 0 {
		return nil
	}
	return e
}
