package launch

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Record is one command started for one shard, checkpointed when it
// starts and again when it ends.
type Record struct {
	Shard int
	// Version identifies the shard's content; a new version is a new launch.
	Version string
	// ArgvHash hashes the command as run, so a changed command relaunches.
	ArgvHash   string
	StartedAt  time.Time
	FinishedAt time.Time
	// ExitCode is the command's exit status; -1 when it did not exit on
	// its own (a signal) or never started.
	ExitCode int
	Duration time.Duration
	// Log is the file the command's output went to.
	Log string
	// Outputs are the files the outputs glob found after the exit.
	Outputs []string
	// Error says why a launch did not succeed ("exit status 1", "stopped
	// by Ctrl-C"), empty when it did.
	Error string
	// Tag is the launch's value of EAGLET_LAUNCH, which the command and
	// everything it starts inherit ("" for launches made before tags).
	Tag string
}

// Finished reports whether the launch ran to its end, as opposed to one
// whose eaglet was killed while it ran.
func (r *Record) Finished() bool { return !r.FinishedAt.IsZero() }

// OK reports whether the launch finished and succeeded.
func (r *Record) OK() bool { return r.Finished() && r.ExitCode == 0 && r.Error == "" }

// stored is a Record as a checkpoint holds it: times as Unix nanoseconds
// (0 for none) and the duration in seconds, the columns of the table
// launches had before checkpoints (state's migration 10 moved them).
type stored struct {
	Shard      int      `json:"shard"`
	Version    string   `json:"version"`
	ArgvHash   string   `json:"argv_hash"`
	StartedNS  int64    `json:"started_ns"`
	FinishedNS int64    `json:"finished_ns"`
	ExitCode   int      `json:"exit_code"`
	DurationS  float64  `json:"duration_s"`
	Log        string   `json:"log"`
	Outputs    []string `json:"outputs"`
	Error      string   `json:"error"`
	Tag        string   `json:"tag,omitempty"`
}

// keyPrefix starts every launch's checkpoint key.
const keyPrefix = "launch/"

// key is a launch's checkpoint key: one per shard and version, so a changed
// shard is launched anew while the launch of its old version stays on
// record.
func (r *Record) key() string { return fmt.Sprintf("%s%09d/%s", keyPrefix, r.Shard, r.Version) }

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromUnixNano(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// fromSeconds is the duration stored as seconds, to the nearest
// nanosecond: truncated, 66906709 ns came back as 66906708 ns.
func fromSeconds(s float64) time.Duration {
	return time.Duration(math.Round(s * float64(time.Second)))
}

// Checkpoints is where launches are recorded: the instance's own
// checkpoints, which the stages package passes to its kinds; declared here
// so this library does not import the stages above it.
type Checkpoints interface {
	// EachCheckpoint calls fn with every value whose key starts with
	// prefix, in key order.
	EachCheckpoint(prefix string, fn func(key string, value []byte) error) error
	// PutCheckpoint stores value under key, replacing what was there.
	PutCheckpoint(key string, value []byte) error
}

// save checkpoints r, replacing the earlier record of its shard version.
func (r *Record) save(cp Checkpoints) error {
	outputs := r.Outputs
	if outputs == nil {
		outputs = []string{}
	}
	b, err := json.Marshal(stored{Shard: r.Shard, Version: r.Version, ArgvHash: r.ArgvHash, StartedNS: unixNano(r.StartedAt),
		FinishedNS: unixNano(r.FinishedAt), ExitCode: r.ExitCode, DurationS: r.Duration.Seconds(), Log: r.Log,
		Outputs: outputs, Error: r.Error, Tag: r.Tag})
	if err != nil {
		return err
	}
	if err := cp.PutCheckpoint(r.key(), b); err != nil {
		return fmt.Errorf("save launch of shard %d: %w", r.Shard, err)
	}
	return nil
}

// records reads every launch checkpointed, by shard, then start time.
func records(cp Checkpoints) ([]Record, error) {
	var out []Record
	err := cp.EachCheckpoint(keyPrefix, func(key string, value []byte) error {
		var s stored
		if err := json.Unmarshal(value, &s); err != nil {
			return fmt.Errorf("launch checkpoint %s: %w", key, err)
		}
		out = append(out, Record{Shard: s.Shard, Version: s.Version, ArgvHash: s.ArgvHash, StartedAt: fromUnixNano(s.StartedNS),
			FinishedAt: fromUnixNano(s.FinishedNS), ExitCode: s.ExitCode, Duration: fromSeconds(s.DurationS),
			Log: s.Log, Outputs: s.Outputs, Error: s.Error, Tag: s.Tag})
		return nil
	})
	slices.SortStableFunc(out, func(a, b Record) int {
		if a.Shard != b.Shard {
			return a.Shard - b.Shard
		}
		if c := a.StartedAt.Compare(b.StartedAt); c != 0 {
			return c
		}
		return strings.Compare(a.Version, b.Version)
	})
	return out, err
}
