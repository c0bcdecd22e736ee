package engine

import (
	"fmt"
	"strings"

	"github.com/eaglet-dev/eaglet/internal/human"
)

// The words users read for decisions and outcomes. Everything here renders
// data decided elsewhere; nothing in eaglet parses these words back.

var actionWords = [...]string{
	Undecided: "undecided",
	Skip:      "up to date",
	Run:       "will run",
	Rerun:     "will rerun",
	Finish:    "will finish",
	Wait:      "will wait for its input",
	Block:     "blocked",
	Fail:      "error",
}

// String is the action as plan's words begin: "will rerun".
func (a Action) String() string {
	if a < 0 || int(a) >= len(actionWords) {
		return fmt.Sprintf("Action(%d)", int(a))
	}
	return actionWords[a]
}

var outcomeWords = [...]string{
	UpToDate:    "up to date",
	Ran:         "ran",
	WouldRun:    "would run",
	Errored:     "failed",
	Blocked:     "blocked",
	Interrupted: "interrupted",
}

// String is the outcome as the end-of-run summary counts it: "ran".
func (o Outcome) String() string {
	if o <= 0 || int(o) >= len(outcomeWords) {
		return fmt.Sprintf("Outcome(%d)", int(o))
	}
	return outcomeWords[o]
}

// String is the decision in plan's words: "up to date", "will rerun:
// max_samples 7000 -> 8000", "blocked: load[chat] did not finish".
func (d Decision) String() string {
	s := d.words()
	if d.Then != nil {
		then := d.Then.words()
		if d.Then.Action == Run {
			// The dry run said why it runs; what is left is its detail.
			then = d.Then.detail()
		}
		s += "; " + then
	}
	return s
}

// words renders the decision without what Then adds.
func (d Decision) words() string {
	switch d.Action {
	case Skip:
		if d.Reason == LimitSpent {
			limit := d.Limit
			if limit == "" {
				limit = "budget"
			}
			return fmt.Sprintf("%s (%s skipped for %s; raise the %s to continue)", Skip, human.Plural(d.Work.Todo, "record"), limit, limit)
		}
		return Skip.String()
	case Wait:
		switch {
		case d.Work == nil:
			return "will run if its input changes"
		case d.Work.Todo == 0:
			return "will recheck its input; no new records expected"
		}
		return "will run after its input: about " + human.Plural(d.Work.Todo, "new record")
	case Block:
		switch d.Reason {
		case NeedsBroken:
			return "blocked: an earlier stage has a problem"
		case NeedsFailedRecords:
			return d.Err.Error()
		}
		return "blocked: " + d.Err.Error()
	case Fail:
		line, _, _ := strings.Cut(d.Err.Error(), "\n")
		return "error: " + line
	case Undecided:
		return ""
	}
	return d.Action.String() + ": " + d.detail()
}

// detail says why an instance runs, reruns or finishes: "never ran".
func (d Decision) detail() string {
	switch d.Reason {
	case Forced:
		return "forced"
	case NeverRan:
		return "never ran"
	case Reconfigured:
		return joinChanges(d.Changed)
	case InputChanged:
		return "input changed"
	case LastRunFailed:
		return "last run failed"
	case StoppedEarly:
		if d.Work != nil && d.Work.Todo == 0 {
			return "last run stopped early; nothing left to process"
		}
		return "last run stopped early"
	case OutputChanged:
		return d.Output + " is missing or was changed"
	case RecordsToDo:
		s := fmt.Sprintf("%d of %s to do", d.Work.Todo, human.Plural(d.Work.Total, "record"))
		if d.Work.AllReused {
			// Every record to do has an earlier answer: none is asked,
			// as "50 of 200 to do" after reuse says elsewhere.
			s += ", none needs a request"
		}
		return s
	case InputUnread:
		return d.Err.Error()
	}
	return d.Reason.String()
}

var reasonWords = [...]string{
	NoReason:           "no reason",
	Forced:             "forced",
	NeverRan:           "never ran",
	Reconfigured:       "reconfigured",
	InputChanged:       "input changed",
	LastRunFailed:      "last run failed",
	StoppedEarly:       "stopped early",
	OutputChanged:      "output changed",
	RecordsToDo:        "records to do",
	InputUnread:        "input unread",
	LimitSpent:         "limit spent",
	InputToCome:        "input to come",
	NeedsBroken:        "needs broken",
	NeedsUnfinished:    "needs unfinished",
	NeedsFailedRecords: "needs failed records",
}

// String names the reason, for logs and tests; Decision.String says it
// with its details.
func (r Reason) String() string {
	if r < 0 || int(r) >= len(reasonWords) {
		return fmt.Sprintf("Reason(%d)", int(r))
	}
	return reasonWords[r]
}

// Words is what plan's ACTION column says of the step: its decision, the
// notes on its estimate, and the answers it takes from elsewhere.
func (s *Step) Words() string {
	w := s.Decision.String()
	if s.Decision.Action == Fail {
		return w
	}
	if len(s.Notes) > 0 {
		w += " (" + strings.Join(s.Notes, "; ") + ")"
	}
	var free []string
	if s.Reused > 0 {
		free = append(free, human.Plural(s.Reused, "earlier answer")+" reused")
	}
	if s.Shared > 0 {
		free = append(free, human.Plural(s.Shared, "prompt")+" asked by another dataset too, sent once")
	}
	if len(free) > 0 {
		w += " [" + strings.Join(free, "; ") + "]"
	}
	return w
}
