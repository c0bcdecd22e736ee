package state

import (
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Instance is the stored state of one stage instance.
type Instance struct {
	ID      string
	Stage   string
	Dataset string
	// Fingerprint hashes the configuration that affects the output.
	Fingerprint string
	// InputDigest hashes what a batch stage last ran on, or the input an
	// item stage's live outcomes were last matched against (Reconcile).
	InputDigest string
	// OutputDigest hashes the live output, so downstream knows if it changed.
	OutputDigest string
	// Status is StatusRunning, StatusDone or StatusFailed.
	Status    string
	StartedAt time.Time
	// FinishedAt is when a run of the instance last finished (zero when
	// none did); an item stage's run under way keeps the one before it.
	FinishedAt time.Time
	// Seconds is the time spent in the instance over all runs.
	Seconds float64
	Stats   Stats
	Error   string
}

// Instance statuses as stored: a run marks an instance running before it
// writes, then done, or failed when the instance itself failed.
const (
	StatusRunning = "running"
	StatusDone    = "done"
	StatusFailed  = "failed"
)

// Stats are counters a stage instance reports beyond its stored items.
type Stats struct {
	// Dropped counts records a batch stage did not pass on, by reason.
	Dropped map[string]int `json:"dropped,omitempty"`
	// Skipped counts bad input rows skipped, by reason.
	Skipped map[string]int `json:"skipped,omitempty"`
	// Copies counts the records a batch stage passed on more than once
	// (merge's weights above 1), beyond the first of each.
	Copies int `json:"copies,omitempty"`
	// Detected is what a loader found the input to be.
	Detected string `json:"detected,omitempty"`
	// Figures are lines of what a stage measured (evaluate's acceptance),
	// and Requests the requests a Batch stage sent in its last run.
	Figures  []string `json:"figures,omitempty"`
	Requests int      `json:"requests,omitempty"`
	// Output is a file the instance wrote, with its hash.
	Output     string `json:"output,omitempty"`
	OutputHash string `json:"output_hash,omitempty"`
	// MoreOutputs are further files the instance wrote (merge's eval
	// split), by path, with their hashes.
	MoreOutputs map[string]string `json:"more_outputs,omitempty"`
	// Flagged counts records a stage passed on but marked, by reason
	// (decontamination with action: flag).
	Flagged map[string]int `json:"flagged,omitempty"`
	// Examples are a few of the records a stage dropped or flagged, each
	// beside what it matched, for `eaglet status --json`.
	Examples []Example `json:"examples,omitempty"`
	// Config is the canonical JSON the fingerprint was made from, kept so
	// plan can say what changed.
	Config json.RawMessage `json:"config,omitempty"`
	// Records counts the live, done output when the instance was saved
	// done, so the next stage need not count a million rows to start.
	Records int `json:"records,omitempty"`
	// Settled is when (unix nanoseconds) an item stage last began a run in
	// which every pending record was checked for an earlier answer to
	// reuse: until another instance runs, none can have appeared.
	Settled int64 `json:"settled,omitempty"`
}

// Example is one record a stage dropped or flagged and what it matched.
type Example struct {
	Reason string `json:"reason"`
	// Record and Match name records as DATASET/KEY (file:line), or a
	// benchmark's file and line.
	Record string `json:"record"`
	Match  string `json:"match"`
	// Similarity is the estimated Jaccard similarity of a near duplicate.
	Similarity float64 `json:"similarity,omitempty"`
	// Text is the matched words (a decontamination n-gram).
	Text string `json:"text,omitempty"`
}

// GetInstance returns the stored instance, or nil when it never ran.
func (s *Store) GetInstance(id string) (*Instance, error) {
	row := s.r.QueryRow(`SELECT id, stage, dataset, fingerprint, input_digest, output_digest, status,
		started_at, finished_at, seconds, stats, error FROM instances WHERE id = ?`, id)
	in, err := scanInstance(row)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	return in, err
}

// Instances returns every stored instance.
func (s *Store) Instances() ([]*Instance, error) {
	rows, err := s.r.Query(`SELECT id, stage, dataset, fingerprint, input_digest, output_digest, status,
		started_at, finished_at, seconds, stats, error FROM instances ORDER BY id`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []*Instance
	for rows.Next() {
		in, err := scanInstance(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, in)
	}
	return out, rows.Err()
}

type scanner interface{ Scan(dest ...any) error }

func scanInstance(r scanner) (*Instance, error) {
	var in Instance
	var started, finished int64
	var stats string
	if err := r.Scan(&in.ID, &in.Stage, &in.Dataset, &in.Fingerprint, &in.InputDigest, &in.OutputDigest,
		&in.Status, &started, &finished, &in.Seconds, &stats, &in.Error); err != nil {
		return nil, err
	}
	if started > 0 {
		in.StartedAt = time.Unix(0, started)
	}
	if finished > 0 {
		in.FinishedAt = time.Unix(0, finished)
	}
	if err := json.Unmarshal([]byte(stats), &in.Stats); err != nil {
		return nil, fmt.Errorf("instance %s: bad stats: %w", in.ID, err)
	}
	return &in, nil
}

// PutInstance stores an instance's state.
func (s *Store) PutInstance(in *Instance) error {
	tx, err := s.w.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if err := putInstance(tx, in); err != nil {
		return err
	}
	return tx.Commit()
}

func putInstance(tx *sql.Tx, in *Instance) error {
	stats, err := json.Marshal(in.Stats)
	if err != nil {
		return err
	}
	_, err = tx.Exec(`INSERT OR REPLACE INTO instances (id, stage, dataset, fingerprint, input_digest,
		output_digest, status, started_at, finished_at, seconds, stats, error)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		in.ID, in.Stage, in.Dataset, in.Fingerprint, in.InputDigest, in.OutputDigest, in.Status,
		unixNano(in.StartedAt), unixNano(in.FinishedAt), in.Seconds, string(stats), in.Error)
	if err != nil {
		return fmt.Errorf("save instance %s: %w", in.ID, err)
	}
	return nil
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// Reset forgets instances, every record they stored and every command
// they launched, so the next run launches them again.
func (s *Store) Reset(ids []string) error {
	tx, err := s.w.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	for _, id := range ids {
		if _, err := tx.Exec(`DELETE FROM items WHERE instance = ?`, id); err != nil {
			return fmt.Errorf("reset %s: %w", id, err)
		}
		if _, err := tx.Exec(`DELETE FROM instances WHERE id = ?`, id); err != nil {
			return fmt.Errorf("reset %s: %w", id, err)
		}
		if _, err := tx.Exec(`DELETE FROM checkpoints WHERE instance = ?`, id); err != nil {
			return fmt.Errorf("reset %s: %w", id, err)
		}
	}
	return tx.Commit()
}
