package engine

import (
	"maps"
	"slices"

	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// State is what an instance's stored results amount to, as status,
// reset and the report show it.
type State string

// Instance states. An instance is NotRun until it first runs; Running
// while a run holds the store and works on it, Incomplete when the run
// that worked on it was killed; Done when its pass finished with nothing
// failed, Partial when some records failed (the next run retries them),
// Failed when every record did or the instance itself failed; Stale when
// it is done but its input is not, and Waiting when it never ran because
// its input is not done (a merge that would not write over failed records).
const (
	NotRun     State = "not run"
	Running    State = "running"
	Incomplete State = "incomplete"
	Done       State = "done"
	Partial    State = "partial"
	Failed     State = "failed"
	Stale      State = "stale"
	Waiting    State = "waiting"
)

// Status is an instance's state and figures from the store. Every record
// in is accounted for: In = Done - Copies + Dropped + Duplicates + Skipped
// + Failed + Pending.
type Status struct {
	Node     *Node  `json:"-"`
	Instance string `json:"instance"`
	Stage    string `json:"stage"`
	Dataset  string `json:"dataset,omitempty"`
	State    State  `json:"state"`
	// In counts the records the instance received: the live output of
	// each of its needs (a record two needs pass on counts twice), or for
	// a loader what it read.
	In               int            `json:"in"`
	Done             int            `json:"done"`
	Dropped          int            `json:"dropped"`
	Skipped          int            `json:"skipped"`
	Failed           int            `json:"failed"`
	PromptTokens     int64          `json:"prompt_tokens"`
	CompletionTokens int64          `json:"completion_tokens"`
	Seconds          float64        `json:"seconds"`
	Reasons          map[string]int `json:"reasons,omitempty"`
	BadRows          map[string]int `json:"bad_rows_skipped,omitempty"`
	Detected         string         `json:"detected,omitempty"`
	// Figures are lines of what the stage measured (evaluate's
	// acceptance by dataset, turn and context length).
	Figures     []string `json:"figures,omitempty"`
	Output      string   `json:"output,omitempty"`
	MoreOutputs []string `json:"more_outputs,omitempty"`
	Error       string   `json:"error,omitempty"`
	// Reused counts done records answered from an earlier answer to the
	// same content instead of a new request.
	Reused int `json:"reused,omitempty"`
	// Duplicates counts input records that repeated an earlier one and
	// were kept once (not dropped).
	Duplicates int `json:"duplicates,omitempty"`
	// Requests counts the requests the live outcomes took over all runs,
	// retries included; Retries the retried failures by kind.
	Requests int            `json:"requests,omitempty"`
	Retries  map[string]int `json:"retries,omitempty"`
	// Copies counts records passed on more than once (merge's weights
	// above 1), beyond the first of each.
	Copies int `json:"copies,omitempty"`
	// Pending counts input records with no outcome yet: a run cut short,
	// or input that changed since the instance ran.
	Pending int `json:"pending,omitempty"`
	// Flagged counts records passed on but marked (decontamination's
	// action: flag), and Examples shows a few dropped or flagged records
	// beside what they matched (a dedupe's survivor, a benchmark line).
	Flagged  map[string]int  `json:"flagged,omitempty"`
	Examples []state.Example `json:"examples,omitempty"`
}

// Status reads every instance's state and figures from store (nil: nothing
// has run). live says a run holds the store now, so an instance marked
// running is running rather than cut short by a kill.
func (p *Pipeline) Status(store *state.Store, live bool) ([]*Status, error) {
	var out []*Status
	for _, n := range p.Nodes {
		st, err := InstanceStatus(store, n.ID, live)
		if err != nil {
			return nil, err
		}
		st.Node, st.Stage = n, n.Stage.Spec.Name
		// Files inside the spec's directory are stored relative to it.
		st.Output = p.Spec.Resolve(st.Output)
		for i, f := range st.MoreOutputs {
			st.MoreOutputs[i] = p.Spec.Resolve(f)
		}
		if n.Dataset != nil {
			st.Dataset = n.Dataset.Name
		}
		if store != nil {
			if err := account(store, n, st); err != nil {
				return nil, err
			}
		}
		out = append(out, st)
	}
	// An instance whose input is still being made is not final, whatever
	// it finished last time; one that never ran on an unfinished input is
	// waiting.
	byID := map[string]State{}
	for i, n := range p.Nodes {
		for _, up := range n.Needs {
			s := byID[up.ID]
			switch {
			case s != Done && s != "" && out[i].State == Done:
				out[i].State = Stale
			case s != Done && s != "" && s != NotRun && out[i].State == NotRun:
				out[i].State = Waiting
			}
		}
		byID[n.ID] = out[i].State
	}
	return out, nil
}

// InstanceStatus reads one instance's stored row and counts, without what
// its inputs say of it (Pipeline.Status adds that); store may be nil.
func InstanceStatus(store *state.Store, id string, live bool) (*Status, error) {
	st := &Status{Instance: id, State: NotRun}
	if store == nil {
		return st, nil
	}
	in, err := store.GetInstance(id)
	if err != nil || in == nil {
		return st, err
	}
	st.State, st.Seconds, st.Detected, st.Output, st.Error = State(in.Status), in.Seconds, in.Stats.Detected, in.Stats.Output, in.Error
	st.Figures = in.Stats.Figures
	if in.Status == state.StatusRunning && !live {
		st.State = Incomplete
	}
	counts, err := store.Counts(id)
	if err != nil {
		return nil, err
	}
	st.Reasons = map[string]int{}
	for _, c := range counts {
		switch stages.Status(c.Status) {
		case stages.Done:
			st.Done += c.N
			st.Reused += c.Reused
			st.PromptTokens += c.PromptTokens
			st.CompletionTokens += c.CompletionTokens
			continue
		case stages.Dropped:
			st.Dropped += c.N
		case stages.Skipped:
			st.Skipped += c.N
		case stages.Failed:
			st.Failed += c.N
		}
		st.Reasons[stages.Status(c.Status).String()+": "+c.Reason] += c.N
	}
	for reason, n := range in.Stats.Dropped {
		if reason == "duplicate" {
			st.Duplicates += n
			continue
		}
		st.Dropped += n
		st.Reasons["dropped: "+reason] += n
	}
	if st.Requests, st.Retries, err = store.Requests(id); err != nil {
		return nil, err
	}
	st.Requests += in.Stats.Requests
	if len(st.Retries) == 0 {
		st.Retries = nil
	}
	st.BadRows = in.Stats.Skipped
	st.Copies = in.Stats.Copies
	st.MoreOutputs = slices.Sorted(maps.Keys(in.Stats.MoreOutputs))
	st.Flagged, st.Examples = in.Stats.Flagged, in.Stats.Examples
	// An instance with failed records finished its pass but is not done:
	// the next run retries them, and what follows works on part of it.
	if st.State == Done && st.Failed > 0 {
		st.State = Partial
		if st.Done == 0 {
			st.State = Failed
		}
	}
	return st, nil
}

// account fills in what the instance received and what of it has no
// outcome yet, so that every record in is accounted for: passed on,
// dropped by reason, a duplicate, skipped, failed or pending.
func account(store *state.Store, n *Node, st *Status) error {
	accounted := st.Done - st.Copies + st.Dropped + st.Duplicates + st.Skipped + st.Failed
	if len(n.Needs) == 0 {
		for _, v := range st.BadRows {
			accounted += v
		}
		st.In = accounted
		return nil
	}
	if st.State == NotRun {
		return nil
	}
	// Each need's records on their own: those several needs share are
	// counted as dropped (collapsed, or a dedupe's copies) by the reader.
	for _, id := range n.Inputs() {
		c, err := store.CountOutputs([]string{id})
		if err != nil {
			return err
		}
		st.In += c
	}
	st.Pending = max(st.In-accounted, 0)
	return nil
}
