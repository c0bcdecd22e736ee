package state

import (
	"fmt"
	"strings"
)

// Checkpoints are what a stage kind records of one instance's own work
// beside its records (a handoff's launch of a command per shard), as JSON
// values under keys the kind chooses; Reset forgets an instance's. They
// are what package stages calls Checkpoints.
type Checkpoints struct {
	s        *Store
	instance string
}

// Checkpoints returns an instance's checkpoints.
func (s *Store) Checkpoints(instance string) *Checkpoints {
	return &Checkpoints{s: s, instance: instance}
}

// EachCheckpoint calls fn with every checkpoint whose key starts with
// prefix, in key order.
func (c *Checkpoints) EachCheckpoint(prefix string, fn func(key string, value []byte) error) error {
	rows, err := c.s.r.Query(`SELECT key, value FROM checkpoints WHERE instance = ? AND key >= ? ORDER BY key`, c.instance, prefix)
	if err != nil {
		return fmt.Errorf("checkpoints of %s: %w", c.instance, err)
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var value []byte
		if err := rows.Scan(&key, &value); err != nil {
			return fmt.Errorf("checkpoints of %s: %w", c.instance, err)
		}
		if !strings.HasPrefix(key, prefix) {
			break
		}
		if err := fn(key, value); err != nil {
			return err
		}
	}
	return rows.Err()
}

// PutCheckpoint stores value under key, replacing what was there.
func (c *Checkpoints) PutCheckpoint(key string, value []byte) error {
	if _, err := c.s.w.Exec(`INSERT OR REPLACE INTO checkpoints (instance, key, value) VALUES (?, ?, ?)`,
		c.instance, key, string(value)); err != nil {
		return fmt.Errorf("checkpoint %s of %s: %w", key, c.instance, err)
	}
	return nil
}

// DropCheckpoint forgets the value under key, if any.
func (c *Checkpoints) DropCheckpoint(key string) error {
	if _, err := c.s.w.Exec(`DELETE FROM checkpoints WHERE instance = ? AND key = ?`, c.instance, key); err != nil {
		return fmt.Errorf("checkpoint %s of %s: %w", key, c.instance, err)
	}
	return nil
}
