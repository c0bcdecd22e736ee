package engine

import (
	"github.com/eaglet-dev/eaglet/state"
)

// Action is what a run does with an instance, decided before it starts.
// Run, plan and the summary render it (words.go); none reads it back.
type Action int

// Actions. Undecided is the zero Action: the instance failed or was
// interrupted before anything was decided. Skip leaves an up-to-date
// instance as it is. Run runs one that never ran or has records to do;
// Rerun one that was forced, reconfigured, whose input or output changed,
// or whose last run failed; Finish one that a run stopped early began.
// Wait is plan's alone: what the instance needs runs first, and the run
// decides once that input exists. Block keeps an instance from starting,
// since what it needs has a problem or did not finish; Fail is one that
// cannot be prepared (a spec or store error).
const (
	Undecided Action = iota
	Skip
	Run
	Rerun
	Finish
	Wait
	Block
	Fail
)

// Reason says why an action was decided; the Decision fields it names
// carry what it is about.
type Reason int

// Reasons. NoReason goes with Skip (up to date) and Undecided.
//
// For Rerun: Forced (--force), Reconfigured (Changed lists the settings
// that differ from the stored run's), InputChanged (the input's digest
// differs from the one recorded), LastRunFailed, OutputChanged (Output is
// the file found missing or changed).
//
// For Run: NeverRan, RecordsToDo (Work counts the input records with no
// outcome), InputUnread (Err: the input's digest could not be read).
//
// For Finish: StoppedEarly (Work, for an item stage, says nothing is
// left to process).
//
// For Skip: LimitSpent (Work.Todo records are left, but the budget or
// target that Limit names is spent).
//
// For Wait: InputToCome (Work, for an item stage, is how many new input
// records are expected).
//
// For Block: NeedsBroken (plan: an instance it needs cannot be planned),
// NeedsUnfinished (Err is an *UnfinishedError), NeedsFailedRecords (Err is
// a *PartialInputError).
//
// Fail has no reason of its own: Err is what went wrong.
const (
	NoReason Reason = iota
	Forced
	NeverRan
	Reconfigured
	InputChanged
	LastRunFailed
	StoppedEarly
	OutputChanged
	RecordsToDo
	InputUnread
	LimitSpent
	InputToCome
	NeedsBroken
	NeedsUnfinished
	NeedsFailedRecords
)

// Decision is what a run does with one instance and why, as data: the
// engine decides it once, and run, plan and the summary render it.
type Decision struct {
	Action Action
	Reason Reason
	// Changed lists the settings that differ (Reconfigured); empty when
	// the stored configuration cannot be compared.
	Changed []Change
	// Output is the file found missing or changed (OutputChanged).
	Output string
	// Work is the input records left to process, when an item stage
	// counted them or plan expects them.
	Work *Work
	// Limit names the spent limit of LimitSpent ("" for a budget).
	Limit string
	// Err is what blocks or fails the instance, or what kept its input
	// from being read (InputUnread).
	Err error
	// Then is what plan found left to do once the dry run had done its
	// part: the requests it would send, after answers found again.
	Then *Decision
}

// Work counts the input records a decision leaves to process.
type Work struct {
	// Todo of Total input records are to be processed; Total is 0 when
	// unknown (input still to be made).
	Todo, Total int
	// AllReused says every record to do was answered by an earlier answer:
	// none needs a request.
	AllReused bool
}

// Runs reports whether the run does anything with the instance.
func (d Decision) Runs() bool {
	if d.Then != nil {
		return d.Then.Runs()
	}
	return d.Action != Skip
}

// decideConfig decides whether an instance runs whatever its records:
// forced, never ran, or run under another configuration. ok is false when
// none of these holds.
func decideConfig(prev *state.Instance, pr *prepared, force bool) (d Decision, ok bool) {
	switch {
	case force:
		return Decision{Action: Rerun, Reason: Forced}, true
	case prev == nil:
		return Decision{Action: Run, Reason: NeverRan}, true
	case prev.Fingerprint != pr.fp:
		return Decision{Action: Rerun, Reason: Reconfigured, Changed: changes(string(prev.Stats.Config), pr.config)}, true
	}
	return Decision{}, false
}

// decideBatch decides whether a batch instance runs: up to date, or what
// changed since its stored output was made. digest is its input's.
func decideBatch(prev *state.Instance, pr *prepared, force bool, digest string) Decision {
	if d, ok := decideConfig(prev, pr, force); ok {
		return d
	}
	// A run that stopped before its output was in recorded no input: it
	// stopped early, whatever its input is now.
	switch {
	case batchUpToDate(prev, pr.inst.Spec, pr.fp, digest):
		return Decision{Action: Skip}
	case prev.InputDigest != "" && prev.InputDigest != digest:
		return Decision{Action: Rerun, Reason: InputChanged}
	case prev.Status == state.StatusFailed:
		return Decision{Action: Rerun, Reason: LastRunFailed}
	case prev.Status != state.StatusDone:
		return Decision{Action: Finish, Reason: StoppedEarly}
	case changedOutput(prev, pr.inst.Spec) != "":
		return Decision{Action: Rerun, Reason: OutputChanged, Output: changedOutput(prev, pr.inst.Spec)}
	}
	return Decision{Action: Rerun, Reason: InputChanged}
}

// decideMapper decides whether an item instance with pending of total
// input records left to process runs.
func decideMapper(prev *state.Instance, pr *prepared, force bool, pending, total int) Decision {
	if d, ok := decideConfig(prev, pr, force); ok {
		return d
	}
	switch {
	case pending > 0:
		return Decision{Action: Run, Reason: RecordsToDo, Work: &Work{Todo: pending, Total: total}}
	case prev.Status != state.StatusDone:
		return Decision{Action: Finish, Reason: StoppedEarly, Work: &Work{Total: total}}
	}
	return Decision{Action: Skip}
}
