package state

import (
	"encoding/json"
	"fmt"
	"time"
)

// Launch is the record of one command started for one shard of an
// instance's output (a hidden-state extraction), checkpointed when it
// starts and again when it ends.
type Launch struct {
	Instance string
	Shard    int
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
	// Outputs are the files the stage's outputs glob found after the exit.
	Outputs []string
	// Error says why a launch did not succeed ("exit status 1", "stopped
	// by Ctrl-C"), empty when it did.
	Error string
}

// Finished reports whether the launch ran to its end, as opposed to one
// whose eaglet was killed while it ran.
func (l *Launch) Finished() bool { return !l.FinishedAt.IsZero() }

// OK reports whether the launch finished and succeeded.
func (l *Launch) OK() bool { return l.Finished() && l.ExitCode == 0 && l.Error == "" }

// Launches returns every launch stored for an instance, by shard then
// start time, the launches of earlier shard versions included.
func (s *Store) Launches(instance string) ([]Launch, error) {
	rows, err := s.r.Query(`SELECT instance, shard, version, argv_hash, started_at, finished_at, exit_code,
		duration, log, outputs, error FROM launches WHERE instance = ? ORDER BY shard, started_at, version`, instance)
	if err != nil {
		return nil, fmt.Errorf("launches of %s: %w", instance, err)
	}
	defer rows.Close()
	var out []Launch
	for rows.Next() {
		var l Launch
		var started, finished int64
		var seconds float64
		var outputs string
		if err := rows.Scan(&l.Instance, &l.Shard, &l.Version, &l.ArgvHash, &started, &finished, &l.ExitCode,
			&seconds, &l.Log, &outputs, &l.Error); err != nil {
			return nil, fmt.Errorf("launches of %s: %w", instance, err)
		}
		if started > 0 {
			l.StartedAt = time.Unix(0, started)
		}
		if finished > 0 {
			l.FinishedAt = time.Unix(0, finished)
		}
		l.Duration = time.Duration(seconds * float64(time.Second))
		if err := json.Unmarshal([]byte(outputs), &l.Outputs); err != nil {
			return nil, fmt.Errorf("launch of %s shard %d: bad outputs: %w", instance, l.Shard, err)
		}
		out = append(out, l)
	}
	return out, rows.Err()
}

// PutLaunch stores a launch, replacing the earlier launch of the same
// shard version.
func (s *Store) PutLaunch(l *Launch) error {
	outputs, err := json.Marshal(l.Outputs)
	if err != nil {
		return err
	}
	if l.Outputs == nil {
		outputs = []byte("[]")
	}
	_, err = s.w.Exec(`INSERT OR REPLACE INTO launches (instance, shard, version, argv_hash, started_at,
		finished_at, exit_code, duration, log, outputs, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		l.Instance, l.Shard, l.Version, l.ArgvHash, unixNano(l.StartedAt), unixNano(l.FinishedAt), l.ExitCode,
		l.Duration.Seconds(), l.Log, string(outputs), l.Error)
	if err != nil {
		return fmt.Errorf("save launch of %s shard %d: %w", l.Instance, l.Shard, err)
	}
	return nil
}
