package state

import (
	"fmt"
	"time"
)

// Garbage is what the store keeps beyond the current output of a spec:
// answers superseded by an option that changed, outcomes set aside when
// their input left (a lowered cap), and the results of instances the spec
// no longer has (a renamed dataset). All of it is what makes going back
// free, so it is only removed when asked (eaglet gc).
type Garbage struct {
	Superseded, SetAside, Orphaned    int
	SupersededB, SetAsideB, OrphanedB int64
	OrphanInstances                   []string
}

// Rows is the number of rows the garbage holds.
func (g Garbage) Rows() int { return g.Superseded + g.SetAside + g.Orphaned }

// Bytes is the size of the records the garbage holds.
func (g Garbage) Bytes() int64 { return g.SupersededB + g.SetAsideB + g.OrphanedB }

// garbageSQL selects the rowids of items that are garbage for a spec whose
// instances are keep, last written before a time: set aside (not live) or
// of another instance, and not the data a kept live row reads through its
// origin.
func garbageSQL(keep []string, orphans bool) string {
	cond := `live = 0 AND instance IN (` + placeholders(len(keep)) + `)`
	if orphans {
		cond = `instance NOT IN (` + placeholders(len(keep)) + `)`
	}
	return `SELECT rowid FROM items WHERE ` + cond + ` AND updated < ?
		EXCEPT SELECT d.rowid FROM items r JOIN items d ON d.instance = r.origin AND d.key = r.key
		WHERE r.data IS NULL AND r.origin != '' AND r.live = 1 AND r.instance IN (` + placeholders(len(keep)) + `)`
}

func keepArgs(keep []string, before time.Time) []any {
	return append(append(args(nil, keep), before.UnixNano()), args(nil, keep)...)
}

// FindGarbage measures the garbage for a spec whose instances are keep,
// counting only what was last written before before.
func (s *Store) FindGarbage(keep []string, before time.Time) (Garbage, error) {
	var g Garbage
	if len(keep) == 0 {
		return g, fmt.Errorf("find garbage: no instances to keep")
	}
	err := s.r.QueryRow(`SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM cache WHERE created < ?`,
		before.UnixNano()).Scan(&g.Superseded, &g.SupersededB)
	if err != nil {
		return g, fmt.Errorf("find garbage: %w", err)
	}
	for _, part := range []struct {
		orphans bool
		n       *int
		b       *int64
	}{{false, &g.SetAside, &g.SetAsideB}, {true, &g.Orphaned, &g.OrphanedB}} {
		q := `SELECT COUNT(*), COALESCE(SUM(LENGTH(data)), 0) FROM items WHERE rowid IN (` + garbageSQL(keep, part.orphans) + `)`
		if err := s.r.QueryRow(q, keepArgs(keep, before)...).Scan(part.n, part.b); err != nil {
			return g, fmt.Errorf("find garbage: %w", err)
		}
	}
	rows, err := s.r.Query(`SELECT id FROM instances WHERE id NOT IN (`+placeholders(len(keep))+`) ORDER BY id`, args(nil, keep)...)
	if err != nil {
		return g, fmt.Errorf("find garbage: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return g, err
		}
		g.OrphanInstances = append(g.OrphanInstances, id)
	}
	return g, rows.Err()
}

// CollectGarbage deletes what FindGarbage measures, in one transaction,
// then compacts the file so the space goes back to the disk.
func (s *Store) CollectGarbage(keep []string, before time.Time) error {
	tx, err := s.w.Begin()
	if err != nil {
		return err
	}
	defer tx.Rollback()
	if _, err := tx.Exec(`DELETE FROM cache WHERE created < ?`, before.UnixNano()); err != nil {
		return fmt.Errorf("collect garbage: %w", err)
	}
	for _, orphans := range []bool{false, true} {
		if _, err := tx.Exec(`DELETE FROM items WHERE rowid IN (`+garbageSQL(keep, orphans)+`)`, keepArgs(keep, before)...); err != nil {
			return fmt.Errorf("collect garbage: %w", err)
		}
	}
	// An instance the spec no longer has is gone once none of its rows is.
	if _, err := tx.Exec(`DELETE FROM instances WHERE id NOT IN (`+placeholders(len(keep))+`)
		AND NOT EXISTS (SELECT 1 FROM items WHERE items.instance = instances.id)`, args(nil, keep)...); err != nil {
		return fmt.Errorf("collect garbage: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return err
	}
	if _, err := s.w.Exec(`VACUUM`); err != nil {
		return fmt.Errorf("compact %s: %w", s.path, err)
	}
	return nil
}
