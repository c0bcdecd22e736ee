package state

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/eaglet-dev/eaglet/internal/accept"
)

// Evaluations are the evaluate stage's results table: what a
// speculative-decoding server reported, a row per request or group, under
// the identity of what was measured. They are what package stages calls
// Results.
type Evaluations struct{ s *Store }

// Evaluations returns the store's results table.
func (s *Store) Evaluations() *Evaluations { return &Evaluations{s: s} }

const evalColumns = `drafter, name, target, sampling, prompt, dataset, turn, context_tokens, segment, requests,
	completion_tokens, verify, accepted, drafted, counted, per_position, latency_us`

// Measured returns the rows stored under the given ids, by id.
func (e *Evaluations) Measured(ids []string) (map[string]accept.Row, error) {
	out := map[string]accept.Row{}
	// SQLite takes up to 32,766 parameters a statement.
	for chunk := range slices.Chunk(ids, 500) {
		rows, err := e.s.r.Query(`SELECT id, `+evalColumns+` FROM evaluations WHERE id IN (`+
			strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ",")+`)`, anys(chunk)...)
		if err != nil {
			return nil, fmt.Errorf("evaluations: %w", err)
		}
		err = scanRows(rows, func(id string, r accept.Row) { out[id] = r })
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Put stores row under id, measured by stage at the given time, replacing
// what was there.
func (e *Evaluations) Put(stage, id string, at time.Time, r accept.Row) error {
	perPos, err := json.Marshal(r.PerPosition)
	if err != nil {
		return err
	}
	_, err = e.s.w.Exec(`INSERT OR REPLACE INTO evaluations (id, stage, measured_ms, `+evalColumns+`)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		id, stage, at.UnixMilli(), r.Drafter, r.Name, r.Target, r.Sampling, r.Prompt, r.Dataset, r.Turn, r.ContextTokens,
		string(r.Segment), r.Requests, r.CompletionTokens, r.Verify, r.Accepted, r.Drafted, r.Counted,
		string(perPos), r.Latency.Microseconds())
	if err != nil {
		return fmt.Errorf("evaluation %s: %w", id, err)
	}
	return nil
}

// Claim makes the rows under ids stage's evaluation, and only those: a
// row found again belongs to the stage that asked for it, whoever measured
// it first, and the rows of a drafter since retrained stay in the table
// (a drafter set back is found again) but leave the stage's evaluation.
func (e *Evaluations) Claim(stage string, ids []string) error {
	tx, err := e.s.w.Begin()
	if err != nil {
		return fmt.Errorf("evaluations of %s: %w", stage, err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`UPDATE evaluations SET stage = '' WHERE stage = ?`, stage); err != nil {
		return fmt.Errorf("evaluations of %s: %w", stage, err)
	}
	for chunk := range slices.Chunk(ids, 500) {
		args := append([]any{stage}, anys(chunk)...)
		if _, err := tx.Exec(`UPDATE evaluations SET stage = ? WHERE id IN (`+
			strings.TrimSuffix(strings.Repeat("?,", len(chunk)), ",")+`)`, args...); err != nil {
			return fmt.Errorf("evaluations of %s: %w", stage, err)
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("evaluations of %s: %w", stage, err)
	}
	return nil
}

// Rows returns stage's evaluation: the rows its last complete run
// measured or found again (and those a run since has measured), in the
// order they were measured.
func (e *Evaluations) Rows(stage string) ([]accept.Row, error) {
	rows, err := e.s.r.Query(`SELECT id, `+evalColumns+` FROM evaluations WHERE stage = ? ORDER BY measured_ms, id`, stage)
	if err != nil {
		return nil, fmt.Errorf("evaluations: %w", err)
	}
	var out []accept.Row
	err = scanRows(rows, func(_ string, r accept.Row) { out = append(out, r) })
	return out, err
}

// Stages returns the stages with an evaluation, the latest measured last.
func (e *Evaluations) Stages() ([]string, error) {
	rows, err := e.s.r.Query(`SELECT stage FROM evaluations WHERE stage != '' GROUP BY stage ORDER BY MAX(measured_ms), stage`)
	if err != nil {
		return nil, fmt.Errorf("evaluations: %w", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

type rowScanner interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

func scanRows(rows rowScanner, fn func(id string, r accept.Row)) error {
	defer rows.Close()
	for rows.Next() {
		var id, segment, perPos string
		var latency int64
		var r accept.Row
		if err := rows.Scan(&id, &r.Drafter, &r.Name, &r.Target, &r.Sampling, &r.Prompt, &r.Dataset, &r.Turn, &r.ContextTokens,
			&segment, &r.Requests, &r.CompletionTokens, &r.Verify, &r.Accepted, &r.Drafted, &r.Counted,
			&perPos, &latency); err != nil {
			return fmt.Errorf("evaluations: %w", err)
		}
		r.Segment = accept.Segment(segment)
		r.Latency = time.Duration(latency) * time.Microsecond
		if err := json.Unmarshal([]byte(perPos), &r.PerPosition); err != nil {
			return fmt.Errorf("evaluation %s: per_position: %w", id, err)
		}
		fn(id, r)
	}
	return rows.Err()
}

// anys returns ids as query arguments.
func anys(ids []string) []any {
	out := make([]any, len(ids))
	for i, id := range ids {
		out[i] = id
	}
	return out
}
