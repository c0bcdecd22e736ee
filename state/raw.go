package state

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"syscall"

	"github.com/mattn/go-sqlite3"
)

// rawWriter runs the writes that bind thousands of values at a time (a
// batch stage's records, a pure stage's outcomes) on the writer's driver
// connection, below database/sql: database/sql copied every statement's
// arguments into a new slice of driver values, 177 of the 894 MB a 100k
// load, cap, filter and merge allocated. The statements and what they
// bind are the same.
type rawWriter struct {
	conn driver.Conn
	// stmts are the statements kept prepared on conn, by name and rows.
	stmts map[stmtKey]driver.Stmt
	// args is the argument list of the statement being built, reused.
	args []driver.NamedValue
}

// rawTx runs fn in one transaction (BEGIN IMMEDIATE, as every write
// transaction of the writer) on the writer's connection, held for the
// whole of it as a database/sql transaction holds it. A transaction that
// cannot be rolled back takes its connection with it, so no later write
// finds one open.
func (s *Store) rawTx(fn func(w *rawWriter) error) error {
	ctx := context.Background()
	c, err := s.w.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Raw(func(dc any) error {
		// Raw hands the connection to one caller at a time, so s.raw
		// needs no lock of its own.
		if s.raw == nil || s.raw.conn != dc {
			conn, ok := dc.(driver.Conn)
			if !ok {
				return fmt.Errorf("driver connection %T", dc)
			}
			s.raw = &rawWriter{conn: conn, stmts: map[stmtKey]driver.Stmt{}}
		}
		begin, ok := dc.(driver.ConnBeginTx)
		if !ok {
			return fmt.Errorf("driver connection %T begins no transaction", dc)
		}
		tx, err := begin.BeginTx(ctx, driver.TxOptions{})
		if err != nil {
			return err
		}
		if err := fn(s.raw); err != nil {
			if rbErr := rollback(dc, tx); rbErr != nil {
				return errors.Join(err, rbErr, driver.ErrBadConn)
			}
			return err
		}
		if err := tx.Commit(); err != nil {
			return errors.Join(err, rollback(dc, tx))
		}
		return nil
	})
}

// rollback ends a failed transaction. SQLite has already rolled back one
// whose statement found the disk full (the connection is back in
// autocommit mode), and "cannot rollback - no transaction is active"
// beside "database or disk is full" only hid the cause.
func rollback(dc any, tx driver.Tx) error {
	err := tx.Rollback()
	if ac, ok := dc.(interface{ AutoCommit() bool }); ok && err != nil && ac.AutoCommit() {
		return nil
	}
	return err
}

// DiskFull reports whether err is a write that found the disk full:
// SQLite's "database or disk is full", or a file's "no space left on
// device". What was committed before stays, and a run after space is
// freed goes on from there.
func DiskFull(err error) bool {
	var se sqlite3.Error
	return errors.As(err, &se) && se.Code == sqlite3.ErrFull || errors.Is(err, syscall.ENOSPC)
}

// add appends one argument; values are driver values (string, int64,
// []byte), as database/sql would have made them.
func (w *rawWriter) add(vals ...driver.Value) {
	for _, v := range vals {
		w.args = append(w.args, driver.NamedValue{Ordinal: len(w.args) + 1, Value: v})
	}
}

// stmtKey names a statement kept prepared: what it does and how many
// rows it takes.
type stmtKey struct {
	name string
	n    int
}

// run runs the statement sqlOf(n) with the arguments added since the
// last run, through Query, which binds them and takes the statement's step
// in one call into C, where Exec crosses into C once per argument (binding
// a row's 12 values one call at a time was a fifth of writing it). A statement kept (keep: a full
// chunk, or one of the few sizes a caller cuts its tails into) is prepared
// once and kept under name and n; any other is prepared for this run
// alone.
func (w *rawWriter) run(name string, sqlOf func(n int) string, n int, keep bool) error {
	return w.query(name, sqlOf, n, keep, nil)
}

// query runs a statement as run does and calls row, when not nil, with
// each row it returns (the values are the driver's, valid until the next
// call).
func (w *rawWriter) query(name string, sqlOf func(n int) string, n int, keep bool, row func([]driver.Value) error) error {
	defer func() { w.args = w.args[:0] }()
	key := stmtKey{name, n}
	st := w.stmts[key]
	if !keep || st == nil {
		var err error
		if st, err = w.conn.Prepare(sqlOf(n)); err != nil {
			return err
		}
		if keep {
			w.stmts[key] = st
		} else {
			defer st.Close()
		}
	}
	query, ok := st.(driver.StmtQueryContext)
	if !ok {
		return fmt.Errorf("driver statement %T takes no query", st)
	}
	rows, err := query.QueryContext(context.Background(), w.args)
	if err != nil {
		return err
	}
	if row != nil {
		dest := make([]driver.Value, len(rows.Columns()))
		for {
			if err := rows.Next(dest); err == io.EOF {
				break
			} else if err != nil {
				rows.Close()
				return err
			}
			if err := row(dest); err != nil {
				rows.Close()
				return err
			}
		}
	}
	return rows.Close()
}

// close finalizes the statements kept, before their connection closes.
func (w *rawWriter) close() error {
	var errs []error
	for _, st := range w.stmts {
		errs = append(errs, st.Close())
	}
	return errors.Join(errs...)
}
