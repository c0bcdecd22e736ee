package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"
)

// OpenReadOnly opens the store at path for reading only, as `eaglet report`
// and `serve` do while a run may be writing it: no lock, no migration, no
// writer connection, and WAL lets each short query read beside the run's
// commits without blocking them. A store of an older schema is refused
// with the command that upgrades it.
func OpenReadOnly(path string) (*Store, error) {
	if !Exists(path) {
		return nil, fmt.Errorf("open state %s: no such file; run the spec first", path)
	}
	dsn := "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path) + "?mode=ro&_busy_timeout=10000"
	r, v, err := openVersion(dsn)
	if err != nil && onReadOnlyFS(path) {
		// WAL needs the -shm file beside the store, which a read-only
		// file system cannot hold; nothing can write the store there
		// either, so SQLite may read it as immutable, without one.
		r, v, err = openVersion(dsn + "&immutable=1")
	}
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	switch {
	case v > SchemaVersion:
		r.Close()
		return nil, fmt.Errorf("open state %s: %w: schema version %d, this eaglet knows up to %d", path, ErrNewerSchema, v, SchemaVersion)
	case v < SchemaVersion:
		r.Close()
		return nil, fmt.Errorf("open state %s: written by an older eaglet (schema %d, this one reads %d); `eaglet status` on the spec upgrades it", path, v, SchemaVersion)
	}
	return &Store{path: path, r: r}, nil
}

// openVersion opens a reader pool at dsn and reads the schema version,
// which is where SQLite finds out whether it can read the file at all.
func openVersion(dsn string) (*sql.DB, int, error) {
	r, err := sql.Open("sqlite3", dsn)
	if err != nil {
		return nil, 0, err
	}
	r.SetMaxOpenConns(4)
	var v int
	if err := r.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		r.Close()
		return nil, 0, err
	}
	return r, v, nil
}

// onReadOnlyFS reports whether the store at path is on a read-only file
// system (a mounted snapshot, an archive).
func onReadOnlyFS(path string) bool {
	return errors.Is(unix.Access(filepath.Dir(path), unix.W_OK), unix.EROFS)
}

// The queries below read the answers of request-sending instances (rows
// with in_chash set) through the covering index items_answers.

// ValueCount is how many live, done records of an instance have one value
// of a column, and how many of those stopped at max_tokens.
type ValueCount struct {
	Value, N, Cut int
}

func tokenCountsSQL(col string) string {
	return `SELECT ` + col + `, COUNT(*), SUM(finish = 'length') FROM items
		WHERE instance = ? AND live = 1 AND status = 0 AND in_chash != '' GROUP BY ` + col + ` ORDER BY ` + col
}

// TokenCounts tallies the live, done records of inst by completion tokens
// (completion true) or prompt tokens, with the number cut at max_tokens
// (finish reason "length") at each: distinct lengths are few next to
// records, so a million records come back as a few thousand rows to bin.
func (s *Store) TokenCounts(ctx context.Context, inst string, completion bool) ([]ValueCount, error) {
	col := "ptok"
	if completion {
		col = "ctok"
	}
	rows, err := s.r.QueryContext(ctx, tokenCountsSQL(col), inst)
	if err != nil {
		return nil, fmt.Errorf("token counts of %s: %w", inst, err)
	}
	defer rows.Close()
	var out []ValueCount
	for rows.Next() {
		var c ValueCount
		if err := rows.Scan(&c.Value, &c.N, &c.Cut); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

const finishSQL = `SELECT finish, COUNT(*) FROM items WHERE instance = ? AND live = 1
	AND status = 0 AND in_chash != '' GROUP BY finish`

// FinishCounts tallies the live, done records of inst by finish reason
// ("" for answers whose record names none).
func (s *Store) FinishCounts(ctx context.Context, inst string) (map[string]int, error) {
	rows, err := s.r.QueryContext(ctx, finishSQL, inst)
	if err != nil {
		return nil, fmt.Errorf("finish reasons of %s: %w", inst, err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var f string
		var n int
		if err := rows.Scan(&f, &n); err != nil {
			return nil, err
		}
		out[f] = n
	}
	return out, rows.Err()
}

func timeSpanSQL(n int) string {
	return `SELECT COALESCE(MIN(sent_ms), 0), COALESCE(MAX(done_ms), 0) FROM items
		WHERE instance IN (` + placeholders(n) + `) AND in_chash != '' AND sent_ms > 0`
}

// TimeSpan is the first send and last finish (Unix ms) of the answers of
// the given instances that carry timing, live or set aside (a superseded
// answer was still work the server did); zero when none has.
func (s *Store) TimeSpan(ctx context.Context, instances []string) (first, last int64, err error) {
	if len(instances) == 0 {
		return 0, 0, nil
	}
	err = s.r.QueryRowContext(ctx, timeSpanSQL(len(instances)), args(nil, instances)...).Scan(&first, &last)
	if err != nil {
		return 0, 0, fmt.Errorf("time span: %w", err)
	}
	return first, last, nil
}

// TimeBin is what one instance's requests to one URL did in one time bin:
// requests sent, requests finished and the completion tokens they brought.
// Bin -1 holds what happened before the start.
type TimeBin struct {
	Instance, URL string
	Bin           int
	Sent, Done    int
	Tokens        int64
	// Streamed counts the requests sent in the bin whose first token was
	// seen (streaming), FirstWait the milliseconds they waited for it.
	Streamed  int
	FirstWait int64
	// Live counts the live, done answers among those finished in the bin,
	// with their tokens: what a budget counts.
	Live                       int
	LivePrompt, LiveCompletion int64
}

// timelineSQL groups answers by when they were sent and when they
// finished at once: one scan and one sort of the rows rather than one of
// each per event.
func timelineSQL(n int) string {
	return `SELECT instance, url, CASE WHEN sent_ms < ? THEN -1 ELSE (sent_ms - ?) / ? END,
		CASE WHEN done_ms < ? THEN -1 ELSE (done_ms - ?) / ? END, COUNT(*), SUM(ctok),
		SUM(first_ms > 0), SUM(CASE WHEN first_ms > 0 THEN first_ms - sent_ms ELSE 0 END),
		SUM(live = 1 AND status = 0), SUM(CASE WHEN live = 1 AND status = 0 THEN ptok ELSE 0 END),
		SUM(CASE WHEN live = 1 AND status = 0 THEN ctok ELSE 0 END) FROM items
		WHERE instance IN (` + placeholders(n) + `) AND in_chash != '' AND sent_ms > 0 GROUP BY 1, 2, 3, 4`
}

// Timeline bins the timed answers of the given instances into bins of
// width ms from start (Unix ms), by instance and URL: sends and the wait
// for their first token by when they were sent, finishes, tokens and the
// live answers among them by when they finished; what came before
// start falls in bin -1. SQLite groups the rows, so only the bins come back.
func (s *Store) Timeline(ctx context.Context, instances []string, start, width int64) ([]TimeBin, error) {
	if len(instances) == 0 || width <= 0 {
		return nil, nil
	}
	rows, err := s.r.QueryContext(ctx, timelineSQL(len(instances)), args([]any{start, start, width, start, start, width}, instances)...)
	if err != nil {
		return nil, fmt.Errorf("timeline: %w", err)
	}
	defer rows.Close()
	var out []TimeBin
	for rows.Next() {
		var sent, done TimeBin
		var n int
		if err := rows.Scan(&sent.Instance, &sent.URL, &sent.Bin, &done.Bin, &n, &done.Tokens, &sent.Streamed, &sent.FirstWait,
			&done.Live, &done.LivePrompt, &done.LiveCompletion); err != nil {
			return nil, err
		}
		sent.Sent = n
		done.Instance, done.URL, done.Done = sent.Instance, sent.URL, n
		out = append(out, sent, done)
	}
	return out, rows.Err()
}

// FailureBin counts the records of an instance that failed with one
// reason in one time bin (by when the failure was stored).
type FailureBin struct {
	Instance, Reason string
	Bin, N           int
}

// Failures bins the live failed records of the given instances failed
// since start as Timeline bins its answers.
func (s *Store) Failures(ctx context.Context, instances []string, start, width int64) ([]FailureBin, error) {
	if len(instances) == 0 || width <= 0 {
		return nil, nil
	}
	// updated is in nanoseconds.
	rows, err := s.r.QueryContext(ctx, `SELECT instance, reason, (updated / 1000000 - ?) / ?, COUNT(*) FROM items
		WHERE instance IN (`+placeholders(len(instances))+`) AND live = 1 AND status = 3 AND in_chash != ''
		AND updated / 1000000 >= ?
		GROUP BY 1, 2, 3`, args([]any{start, width}, instances, start)...)
	if err != nil {
		return nil, fmt.Errorf("failures over time: %w", err)
	}
	defer rows.Close()
	var out []FailureBin
	for rows.Next() {
		var b FailureBin
		if err := rows.Scan(&b.Instance, &b.Reason, &b.Bin, &b.N); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, rows.Err()
}

// Sample returns up to n live, done records of inst. Keys are content
// hashes, so the first n by key are a fair sample of the whole.
func (s *Store) Sample(ctx context.Context, inst string, n int) ([]Row, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+resolved+` WHERE u.instance = ? AND u.live = 1 AND u.status = 0
		ORDER BY u.key LIMIT ?`, inst, n)
	if err != nil {
		return nil, fmt.Errorf("sample of %s: %w", inst, err)
	}
	defer rows.Close()
	var out []Row
	for rows.Next() {
		var r Row
		if err := rows.Scan(&r.Key, &r.Hash, &r.Origin, &r.Data, &r.Chash); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rows.Err()
}

const answersDoneSQL = `SELECT COUNT(*), COALESCE(SUM(ptok), 0), COALESCE(SUM(ctok), 0) FROM items
	WHERE instance = ? AND live = 1 AND status = 0 AND in_chash != ''`

// AnswerCounts tallies the live answers of a request-sending instance by
// status and reason, as Counts does for any instance (Reused left 0), but
// reads the done ones from the index items_answers and only the others
// (failed, skipped: few) from their rows.
func (s *Store) AnswerCounts(ctx context.Context, inst string) ([]Count, error) {
	done := Count{Status: 0}
	if err := s.r.QueryRowContext(ctx, answersDoneSQL, inst).Scan(&done.N, &done.PromptTokens, &done.CompletionTokens); err != nil {
		return nil, fmt.Errorf("answers of %s: %w", inst, err)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT status, reason, COUNT(*) FROM items
		WHERE instance = ? AND live = 1 AND status > 0 AND in_chash != '' GROUP BY status, reason ORDER BY status, reason`, inst)
	if err != nil {
		return nil, fmt.Errorf("answers of %s: %w", inst, err)
	}
	defer rows.Close()
	var out []Count
	if done.N > 0 {
		out = append(out, done)
	}
	for rows.Next() {
		var c Count
		if err := rows.Scan(&c.Status, &c.Reason, &c.N); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
