package state

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mattn/go-sqlite3"
)

// DamagedError says the store failed SQLite's integrity check, so eaglet
// writes nothing into it: a write may spread the damage, and what the
// store says is done may not be.
type DamagedError struct {
	Path string
	// Problems are the first lines of the check's findings.
	Problems []string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("state %s is damaged (SQLite's quick_check: %s); eaglet writes nothing into it: "+
		"restore it, with its -wal file, from a backup, or move it away to start afresh (the next run then redoes everything)",
		e.Path, strings.Join(e.Problems, "; "))
}

// checkProblems is how many of the check's findings a DamagedError keeps:
// one says the store is damaged, a few say where.
const checkProblems = 3

// checkWritable runs SQLite's quick_check once per open store, before its
// first write (Lock, SavePlan): it reads every page, which Open must not
// (status and report open stores of gigabytes), but a command that writes
// reads most of them anyway. About 70 ms for a 115 MB store in the page
// cache; it does not compare indexes with their tables, as integrity_check
// does at five times the cost.
func (s *Store) checkWritable() error {
	s.checkOnce.Do(func() { s.checkErr = s.quickCheck() })
	return s.checkErr
}

func (s *Store) quickCheck() error {
	rows, err := s.w.Query(fmt.Sprintf(`PRAGMA quick_check(%d)`, checkProblems))
	if err != nil {
		return s.damaged(err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			return s.damaged(err)
		}
		if line != "ok" {
			problems = append(problems, line)
		}
	}
	if err := rows.Err(); err != nil {
		return s.damaged(err)
	}
	if len(problems) > 0 {
		return &DamagedError{Path: s.path, Problems: problems}
	}
	return nil
}

// damaged is a DamagedError when err is SQLite finding the file malformed
// or not a database, else err in context.
func (s *Store) damaged(err error) error {
	var se sqlite3.Error
	if errors.As(err, &se) && (se.Code == sqlite3.ErrCorrupt || se.Code == sqlite3.ErrNotADB) {
		return &DamagedError{Path: s.path, Problems: []string{err.Error()}}
	}
	return fmt.Errorf("check state %s: %w", s.path, err)
}

// unversioned refuses a store of schema version 0 that has tables: one
// eaglet made has a version from its first migration on, so its version
// was reset (or another program wrote the file), and migrating from 0
// would fail on the tables already there.
func (s *Store) unversioned() error {
	var n int
	if err := s.w.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table'`).Scan(&n); err != nil {
		return s.damaged(err)
	}
	if n == 0 {
		return nil
	}
	return fmt.Errorf("the file has %d tables but schema version 0 (PRAGMA user_version), which no eaglet leaves: its version was reset, or it is not an eaglet store; "+
		"restore it from a backup, or move it away to start afresh (the next run then redoes everything)", n)
}
