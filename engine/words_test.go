package engine

import (
	"errors"
	"testing"
)

func TestAction_String(t *testing.T) {
	tests := []struct {
		a    Action
		want string
	}{
		{Undecided, "undecided"},
		{Skip, "up to date"},
		{Run, "will run"},
		{Rerun, "will rerun"},
		{Finish, "will finish"},
		{Wait, "will wait for its input"},
		{Block, "blocked"},
		{Fail, "error"},
		{Fail + 1, "Action(8)"},
	}
	for _, tt := range tests {
		if got := tt.a.String(); got != tt.want {
			t.Errorf("Action(%d) = %q; want %q", int(tt.a), got, tt.want)
		}
	}
}

// TestOutcome_String: the words the end-of-run summary counts.
func TestOutcome_String(t *testing.T) {
	tests := []struct {
		o    Outcome
		want string
	}{
		{UpToDate, "up to date"},
		{Ran, "ran"},
		{WouldRun, "would run"},
		{Errored, "failed"},
		{Blocked, "blocked"},
		{Interrupted, "interrupted"},
		{0, "Outcome(0)"},
	}
	for _, tt := range tests {
		if got := tt.o.String(); got != tt.want {
			t.Errorf("Outcome(%d) = %q; want %q", int(tt.o), got, tt.want)
		}
	}
}

// TestDecision_String: each action and reason in the words plan, run and
// the summary show.
func TestDecision_String(t *testing.T) {
	toDo := &Work{Todo: 50, Total: 200}
	tests := []struct {
		name string
		d    Decision
		want string
	}{
		{"undecided", Decision{}, ""},
		{"up to date", Decision{Action: Skip}, "up to date"},
		{"budget spent", Decision{Action: Skip, Reason: LimitSpent, Work: &Work{Todo: 40}},
			"up to date (40 records skipped for budget; raise the budget to continue)"},
		{"target met", Decision{Action: Skip, Reason: LimitSpent, Limit: "target", Work: &Work{Todo: 1}},
			"up to date (1 record skipped for target; raise the target to continue)"},
		{"never ran", Decision{Action: Run, Reason: NeverRan}, "will run: never ran"},
		{"records to do", Decision{Action: Run, Reason: RecordsToDo, Work: toDo}, "will run: 50 of 200 records to do"},
		{"records to do, all answered before", Decision{Action: Run, Reason: RecordsToDo, Work: &Work{Todo: 1, Total: 1, AllReused: true}},
			"will run: 1 of 1 record to do, none needs a request"},
		{"input unread", Decision{Action: Run, Reason: InputUnread, Err: errors.New("load[chat] has not run")},
			"will run: load[chat] has not run"},
		{"forced", Decision{Action: Rerun, Reason: Forced}, "will rerun: forced"},
		{"reconfigured", Decision{Action: Rerun, Reason: Reconfigured, Changed: []Change{{Key: "max_samples", Old: "7000", New: "8000"}, opaque}},
			"will rerun: max_samples 7000 -> 8000, input file or model changed"},
		{"reconfigured, nothing named", Decision{Action: Rerun, Reason: Reconfigured}, "will rerun: configuration changed"},
		{"input changed", Decision{Action: Rerun, Reason: InputChanged}, "will rerun: input changed"},
		{"last run failed", Decision{Action: Rerun, Reason: LastRunFailed}, "will rerun: last run failed"},
		{"output changed", Decision{Action: Rerun, Reason: OutputChanged, Output: "train.jsonl"}, "will rerun: train.jsonl is missing or was changed"},
		{"stopped early", Decision{Action: Finish, Reason: StoppedEarly}, "will finish: last run stopped early"},
		{"stopped early, nothing left", Decision{Action: Finish, Reason: StoppedEarly, Work: &Work{Total: 80}},
			"will finish: last run stopped early; nothing left to process"},
		{"input to come", Decision{Action: Wait, Reason: InputToCome}, "will run if its input changes"},
		{"input to come, new records", Decision{Action: Wait, Reason: InputToCome, Work: &Work{Todo: 30}}, "will run after its input: about 30 new records"},
		{"input to come, none new", Decision{Action: Wait, Reason: InputToCome, Work: &Work{}}, "will recheck its input; no new records expected"},
		{"blocked by a broken need", Decision{Action: Block, Reason: NeedsBroken}, "blocked: an earlier stage has a problem"},
		{"blocked by unfinished needs", Decision{Action: Block, Reason: NeedsUnfinished, Err: &UnfinishedError{Needs: []string{"load[a]", "load[b]"}}},
			"blocked: load[a], load[b] did not finish"},
		{"blocked by failed records", Decision{Action: Block, Reason: NeedsFailedRecords,
			Err: &PartialInputError{Failed: []FailedRecords{{"generate[chat]", 3}, {"generate[code]", 1}}}},
			"not written: generate[chat] has 3 failed records, generate[code] has 1 failed record; run again to retry them, or pass --allow-partial to write what there is"},
		{"blocked, failed records uncounted", Decision{Action: Block, Reason: NeedsFailedRecords,
			Err: &PartialInputError{Err: errors.New("cannot read generate[chat]: disk I/O error")}},
			"not written: cannot read generate[chat]: disk I/O error"},
		{"error", Decision{Action: Fail, Err: errors.New("spec.yaml:8:82: cap[chat]: max_samples is -860\n    | the line")},
			"error: spec.yaml:8:82: cap[chat]: max_samples is -860"},
		{"why, then records to do", Decision{Action: Rerun, Reason: Forced, Then: &Decision{Action: Run, Reason: RecordsToDo, Work: toDo}},
			"will rerun: forced; 50 of 200 records to do"},
		{"why, then waiting for input", Decision{Action: Run, Reason: NeverRan, Then: &Decision{Action: Wait, Reason: InputToCome, Work: &Work{Todo: 3}}},
			"will run: never ran; will run after its input: about 3 new records"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.d.String(); got != tt.want {
				t.Errorf("got %q; want %q", got, tt.want)
			}
		})
	}
}

// TestDecision_Runs: everything but up to date runs; what plan found left
// after the dry run decides.
func TestDecision_Runs(t *testing.T) {
	tests := []struct {
		d    Decision
		want bool
	}{
		{Decision{Action: Skip}, false},
		{Decision{Action: Skip, Reason: LimitSpent, Work: &Work{Todo: 4}}, false},
		{Decision{Action: Run, Reason: NeverRan}, true},
		{Decision{Action: Wait, Reason: InputToCome}, true},
		{Decision{Action: Block, Reason: NeedsBroken}, true},
		{Decision{Action: Fail, Err: errors.New("x")}, true},
		{Decision{Action: Run, Reason: NeverRan, Then: &Decision{Action: Skip, Reason: LimitSpent, Work: &Work{Todo: 4}}}, false},
	}
	for _, tt := range tests {
		if got := tt.d.Runs(); got != tt.want {
			t.Errorf("%q runs: %v; want %v", tt.d, got, tt.want)
		}
	}
}

// TestStep_Words: plan's ACTION column is the decision, then the notes on
// the estimate, then the answers taken from elsewhere; an error is its
// first line alone.
func TestStep_Words(t *testing.T) {
	run := Decision{Action: Run, Reason: RecordsToDo, Work: &Work{Todo: 140, Total: 140}}
	tests := []struct {
		name string
		s    Step
		want string
	}{
		{"decision alone", Step{Decision: run}, "will run: 140 of 140 records to do"},
		{"notes", Step{Decision: run, Notes: []string{"writes train.jsonl", "the budget allows 89% of them"}},
			"will run: 140 of 140 records to do (writes train.jsonl; the budget allows 89% of them)"},
		{"reused and shared", Step{Decision: run, Reused: 1, Shared: 2},
			"will run: 140 of 140 records to do [1 earlier answer reused; 2 prompts asked by another dataset too, sent once]"},
		{"up to date, reused", Step{Decision: Decision{Action: Skip}, Reused: 3}, "up to date [3 earlier answers reused]"},
		{"error", Step{Decision: Decision{Action: Fail, Err: errors.New("generate[chat]: no endpoint\nmore")}, Notes: []string{"x"}, Reused: 3},
			"error: generate[chat]: no endpoint"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.s.Words(); got != tt.want {
				t.Errorf("got %q; want %q", got, tt.want)
			}
		})
	}
}
