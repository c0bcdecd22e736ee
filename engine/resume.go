package engine

import (
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// What lets a resumed item stage dispatch at once instead of matching and
// counting a million records first.

// quietSince reports whether no instance but n has run since the time
// (unix nanoseconds) n last looked for answers to reuse: answers are only
// stored by running instances, so none can have appeared for n's records.
// An instance left running or failed may have stored some at any time.
func (r *runner) quietSince(n *Node, since int64) bool {
	if since == 0 {
		return false
	}
	all, err := r.store.Instances()
	if err != nil {
		return false
	}
	for _, in := range all {
		if in.ID == n.ID {
			continue
		}
		if in.Status != state.StatusDone || in.StartedAt.UnixNano() > since || in.FinishedAt.UnixNano() > since {
			return false
		}
	}
	return true
}

// pendingSettled counts the pending records of an instance whose outcomes
// match its input (Reconcile holds): its input less the live outcomes that
// are not retried, which reads its outcomes but not its input.
func (r *runner) pendingSettled(inst string, total int) (int, error) {
	counts, err := r.store.Counts(inst)
	if err != nil {
		return 0, err
	}
	already, _ := alreadyDone(counts)
	return max(total-already, 0), nil
}

// alreadyDone reads from an instance's counts the outcomes that stand
// (done or dropped) and, of them, the done ones.
func alreadyDone(counts []state.Count) (already, kept int) {
	for _, c := range counts {
		switch stages.Status(c.Status) {
		case stages.Done:
			kept += c.N
			already += c.N
		case stages.Dropped:
			already += c.N
		}
	}
	return already, kept
}
