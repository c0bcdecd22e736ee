package state

import (
	"fmt"
	"strings"
	"sync"
	"time"
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

// runOwner owns the run's own checkpoints: no instance id is empty, so
// resetting an instance never forgets them.
const runOwner = ""

// RunCheckpoints returns what runs record of their own beside the
// instances' (the servers of launched endpoints that may outlive them).
func (s *Store) RunCheckpoints() *Checkpoints { return s.Checkpoints(runOwner) }

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

// KeepLater stores value under key, or forgets key when value is nil, in
// a batch written within laterEvery: for what a kill may lose at small
// cost (a multi-answer record's answers so far), since a transaction of
// one row writes a page or two of the WAL. Flush and Close write it at
// once.
func (c *Checkpoints) KeepLater(key string, value []byte) {
	c.s.later.add(laterOp{instance: c.instance, key: key, value: value})
}

// Flush writes what KeepLater holds.
func (c *Checkpoints) Flush() error { return c.s.later.flush() }

// FlushKept writes what every instance's KeepLater holds.
func (s *Store) FlushKept() error { return s.later.flush() }

// laterEvery is how long KeepLater holds a write; laterBatch writes
// flush at once.
const (
	laterEvery = 100 * time.Millisecond
	laterBatch = 512
)

type laterOp struct {
	instance, key string
	value         []byte
}

// laterWriter holds KeepLater's writes until its timer or its size.
type laterWriter struct {
	s       *Store
	mu      sync.Mutex
	pending []laterOp
	timer   *time.Timer
	// writing lets one flush write at a time, in the order they took
	// their batches.
	writing sync.Mutex
	err     error
}

func (l *laterWriter) add(op laterOp) {
	l.mu.Lock()
	l.pending = append(l.pending, op)
	n := len(l.pending)
	if n == 1 {
		l.timer = time.AfterFunc(laterEvery, func() { l.flush() })
	}
	l.mu.Unlock()
	if n >= laterBatch {
		go l.flush()
	}
}

// flush writes the held batch in one transaction and returns the first
// error any flush met.
func (l *laterWriter) flush() error {
	if l == nil {
		return nil // a read-only store
	}
	l.writing.Lock()
	defer l.writing.Unlock()
	l.mu.Lock()
	ops := l.pending
	l.pending = nil
	if l.timer != nil {
		l.timer.Stop()
		l.timer = nil
	}
	l.mu.Unlock()
	if len(ops) > 0 {
		if err := l.write(ops); err != nil && l.err == nil {
			l.err = fmt.Errorf("checkpoints: %w", err)
		}
	}
	return l.err
}

func (l *laterWriter) write(ops []laterOp) error {
	tx, err := l.s.w.Begin()
	if err != nil {
		return err
	}
	for _, op := range ops {
		if op.value == nil {
			_, err = tx.Exec(`DELETE FROM checkpoints WHERE instance = ? AND key = ?`, op.instance, op.key)
		} else {
			_, err = tx.Exec(`INSERT OR REPLACE INTO checkpoints (instance, key, value) VALUES (?, ?, ?)`, op.instance, op.key, string(op.value))
		}
		if err != nil {
			tx.Rollback()
			return err
		}
	}
	return tx.Commit()
}
