package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/mattn/go-sqlite3"
)

// ErrBusy says a short write gave up waiting for the database's write lock
// (a run was committing) rather than make that run wait.
var ErrBusy = errors.New("the state store is busy")

// Plan is the last plan recorded: when, for which spec, and its figures
// (JSON the caller defines).
type Plan struct {
	Made   time.Time
	SpecFP string
	Body   []byte
}

// SavePlan replaces the recorded plan in one short transaction, waiting at
// most wait for the write lock: plan runs beside runs, and a plan left
// unrecorded costs less than a run kept waiting. It returns ErrBusy when
// the wait ran out, and *DamagedError for a store that fails its check.
func (s *Store) SavePlan(ctx context.Context, p Plan, wait time.Duration) error {
	if err := s.checkWritable(); err != nil {
		return err
	}
	conn, err := s.w.Conn(ctx)
	if err != nil {
		return fmt.Errorf("record plan: %w", err)
	}
	defer conn.Close()
	// The writer connection waits 10 s for others by default; this write
	// may wait less, and the connection goes back to the pool as it was.
	if _, err := conn.ExecContext(ctx, `PRAGMA busy_timeout = `+strconv.Itoa(int(wait.Milliseconds()))); err != nil {
		return fmt.Errorf("record plan: %w", err)
	}
	defer conn.ExecContext(context.Background(), `PRAGMA busy_timeout = 10000`)
	err = func() error {
		tx, err := conn.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.Exec(`DELETE FROM plans`); err != nil {
			return err
		}
		if _, err := tx.Exec(`INSERT INTO plans (made, spec_fp, body) VALUES (?, ?, ?)`, p.Made.UnixMilli(), p.SpecFP, string(p.Body)); err != nil {
			return err
		}
		return tx.Commit()
	}()
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrBusy || se.Code == sqlite3.ErrLocked) {
		return fmt.Errorf("record plan: %w", ErrBusy)
	}
	if err != nil {
		return fmt.Errorf("record plan: %w", err)
	}
	return nil
}

// LastPlan returns the recorded plan, or nil when none was.
func (s *Store) LastPlan(ctx context.Context) (*Plan, error) {
	var p Plan
	var made int64
	var body string
	err := s.r.QueryRowContext(ctx, `SELECT made, spec_fp, body FROM plans ORDER BY made DESC LIMIT 1`).Scan(&made, &p.SpecFP, &body)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("last plan: %w", err)
	}
	p.Made, p.Body = time.UnixMilli(made), []byte(body)
	return &p, nil
}

// AnswersSince sums the answers of the given instances sent at or after
// since (Unix ms), live or set aside since (a superseded answer was still
// work paid for): how many, their tokens, and the first send and last
// finish. What a run did after a plan, to compare with it.
func (s *Store) AnswersSince(ctx context.Context, instances []string, since int64) (Spent, error) {
	var sp Spent
	if len(instances) == 0 {
		return sp, nil
	}
	err := s.r.QueryRowContext(ctx, `SELECT COUNT(*), COALESCE(SUM(ptok), 0), COALESCE(SUM(ctok), 0),
		COALESCE(MIN(sent_ms), 0), COALESCE(MAX(done_ms), 0) FROM items
		WHERE instance IN (`+placeholders(len(instances))+`) AND in_chash != '' AND status = 0 AND sent_ms >= ?`,
		args(nil, instances, since)...).Scan(&sp.Answers, &sp.PromptTokens, &sp.CompletionTokens, &sp.First, &sp.Last)
	if err != nil {
		return sp, fmt.Errorf("answers since %d: %w", since, err)
	}
	return sp, nil
}

// Spent is what answers took: their number, tokens, and the first send
// and last finish (Unix ms).
type Spent struct {
	Answers                        int
	PromptTokens, CompletionTokens int64
	First, Last                    int64
}
