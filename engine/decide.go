package engine

import (
	"fmt"

	"github.com/eaglet-dev/eaglet/state"
)

// upToDate is the decision that an instance has nothing to do. Run, plan
// and status decide it here and nowhere else, in the words plan shows.
const upToDate = "up to date"

// configWhy says why an instance runs whatever its records: forced, never
// ran, or run under another configuration; empty when none of these holds.
func configWhy(prev *state.Instance, pr *prepared, force bool) string {
	switch {
	case force:
		return "will rerun: forced"
	case prev == nil:
		return "will run: never ran"
	case prev.Fingerprint != pr.fp:
		return "will rerun: " + configDiff(string(prev.Stats.Config), pr.config)
	}
	return ""
}

// batchWhy decides whether a batch instance runs, in the words plan shows:
// "up to date", or what changed since its stored output was made.
func batchWhy(prev *state.Instance, pr *prepared, force bool, digest string) string {
	if why := configWhy(prev, pr, force); why != "" {
		return why
	}
	// A run that stopped before its output was in recorded no input: it
	// stopped early, whatever its input is now.
	switch {
	case batchUpToDate(prev, pr.inst.Spec, pr.fp, digest):
		return upToDate
	case prev.InputDigest != "" && prev.InputDigest != digest:
		return "will rerun: input changed"
	case prev.Status == state.StatusFailed:
		return "will rerun: last run failed"
	case prev.Status != state.StatusDone:
		return "will finish: last run stopped early"
	case changedOutput(prev, pr.inst.Spec) != "":
		return "will rerun: " + changedOutput(prev, pr.inst.Spec) + " is missing or was changed"
	}
	return "will rerun: input changed"
}

// mapperWhy says why an item instance with pending of total input records
// left to process runs.
func mapperWhy(prev *state.Instance, pr *prepared, force bool, pending, total int) string {
	if why := configWhy(prev, pr, force); why != "" {
		return why
	}
	switch {
	case pending > 0:
		return fmt.Sprintf("will run: %d of %s to do", pending, Plural(total, "record"))
	case prev.Status != state.StatusDone:
		return "will finish: last run stopped early; nothing left to process"
	}
	return upToDate
}
