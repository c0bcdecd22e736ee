// Package state is eaglet's checkpoint store: one SQLite file in WAL mode
// holding every stage instance's fingerprint and every record's outcome. It
// owns every SQL statement of the project.
package state

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"

	_ "github.com/mattn/go-sqlite3" // registers the "sqlite3" driver
)

// migrations[i] brings the schema from version i to i+1. Append only.
var migrations = []string{
	`CREATE TABLE instances (
		id            TEXT PRIMARY KEY,
		stage         TEXT NOT NULL,
		dataset       TEXT NOT NULL DEFAULT '',
		fingerprint   TEXT NOT NULL DEFAULT '',
		input_digest  TEXT NOT NULL DEFAULT '',
		output_digest TEXT NOT NULL DEFAULT '',
		status        TEXT NOT NULL DEFAULT 'pending',
		started_at    INTEGER NOT NULL DEFAULT 0,
		finished_at   INTEGER NOT NULL DEFAULT 0,
		seconds       REAL NOT NULL DEFAULT 0,
		stats         TEXT NOT NULL DEFAULT '{}',
		error         TEXT NOT NULL DEFAULT ''
	);
	CREATE TABLE items (
		instance TEXT NOT NULL,
		key      TEXT NOT NULL,
		live     INTEGER NOT NULL DEFAULT 1,
		status   INTEGER NOT NULL,
		reason   TEXT NOT NULL DEFAULT '',
		fp       TEXT NOT NULL DEFAULT '',
		in_hash  TEXT NOT NULL DEFAULT '',
		out_hash TEXT NOT NULL DEFAULT '',
		origin   TEXT NOT NULL DEFAULT '',
		data     BLOB,
		ord      INTEGER NOT NULL DEFAULT 0,
		ptok     INTEGER NOT NULL DEFAULT 0,
		ctok     INTEGER NOT NULL DEFAULT 0,
		attempts INTEGER NOT NULL DEFAULT 1,
		updated  INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (instance, key)
	) WITHOUT ROWID;`,
	// Ordered outputs (merge's shuffle) are read page by page in ord order.
	`CREATE INDEX items_ord ON items (instance, ord, key);`,
	// Only ordered rows need that index; leaving the rest out makes every
	// other write cheaper.
	`DROP INDEX items_ord; CREATE INDEX items_ord ON items (instance, ord, key) WHERE ord != 0;`,
	// A rowid table: records are kilobytes and keys are content hashes, so
	// in the clustered WITHOUT ROWID table every insert landed on a random
	// leaf of large rows and every commit rewrote hundreds of pages. Rows
	// now append and only the small (instance, key) index takes random
	// inserts: 4x faster commits of 1 KiB records (BenchmarkCommit).
	`CREATE TABLE items_v4 (
		instance TEXT NOT NULL,
		key      TEXT NOT NULL,
		live     INTEGER NOT NULL DEFAULT 1,
		status   INTEGER NOT NULL,
		reason   TEXT NOT NULL DEFAULT '',
		fp       TEXT NOT NULL DEFAULT '',
		in_hash  TEXT NOT NULL DEFAULT '',
		out_hash TEXT NOT NULL DEFAULT '',
		origin   TEXT NOT NULL DEFAULT '',
		data     BLOB,
		ord      INTEGER NOT NULL DEFAULT 0,
		ptok     INTEGER NOT NULL DEFAULT 0,
		ctok     INTEGER NOT NULL DEFAULT 0,
		attempts INTEGER NOT NULL DEFAULT 1,
		updated  INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (instance, key)
	);
	INSERT INTO items_v4 SELECT instance, key, live, status, reason, fp, in_hash, out_hash, origin, data, ord,
		ptok, ctok, attempts, updated FROM items;
	DROP TABLE items;
	ALTER TABLE items_v4 RENAME TO items;
	CREATE INDEX items_ord ON items (instance, ord, key) WHERE ord != 0;`,
	// Identity by content (and what a record cost): chash hashes a row's record without its
	// provenance (file, line, dataset), in_chash the input a costly outcome
	// (a generation) was made from, so the same prompt moved, renamed or
	// reordered finds its answer again. cache keeps answers that a changed
	// option superseded, so setting the option back costs nothing.
	// requests and retries say what a record's outcome took to get:
	// requests sent, and the retried failures by kind ("http 503=2").
	`ALTER TABLE items ADD COLUMN chash TEXT NOT NULL DEFAULT '';
	ALTER TABLE items ADD COLUMN in_chash TEXT NOT NULL DEFAULT '';
	ALTER TABLE items ADD COLUMN reused INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE items ADD COLUMN requests INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE items ADD COLUMN retries TEXT NOT NULL DEFAULT '';
	CREATE INDEX items_reuse ON items (in_chash, fp) WHERE in_chash != '';
	CREATE TABLE cache (
		fp       TEXT NOT NULL,
		in_chash TEXT NOT NULL,
		data     BLOB NOT NULL,
		ptok     INTEGER NOT NULL DEFAULT 0,
		ctok     INTEGER NOT NULL DEFAULT 0,
		created  INTEGER NOT NULL DEFAULT 0,
		PRIMARY KEY (fp, in_chash)
	);`,
	// Launches of a command per shard (a handoff's hidden-state
	// extraction). A row per shard and version, so a changed shard is
	// launched anew while the launch of its old version, and the outputs
	// it names, stay on record. finished_at = 0 with started_at set is a
	// launch whose eaglet was killed: the next run launches it again.
	`CREATE TABLE launches (
		instance    TEXT NOT NULL,
		shard       INTEGER NOT NULL,
		version     TEXT NOT NULL,
		argv_hash   TEXT NOT NULL DEFAULT '',
		started_at  INTEGER NOT NULL DEFAULT 0,
		finished_at INTEGER NOT NULL DEFAULT 0,
		exit_code   INTEGER NOT NULL DEFAULT 0,
		duration    REAL NOT NULL DEFAULT 0,
		log         TEXT NOT NULL DEFAULT '',
		outputs     TEXT NOT NULL DEFAULT '[]',
		error       TEXT NOT NULL DEFAULT '',
		PRIMARY KEY (instance, shard, version)
	);`,
	// The dataset of each record of an instance that is not per dataset
	// (a dedupe over every dataset), so a per-dataset stage after it reads
	// its own dataset's records only. Rows of such instances written
	// before are filled in from their records.
	`ALTER TABLE items ADD COLUMN dataset TEXT NOT NULL DEFAULT '';
	UPDATE items SET dataset = COALESCE(json_extract(data, '$.dataset'), '')
		WHERE data IS NOT NULL AND json_valid(data) AND instance IN (SELECT id FROM instances WHERE dataset = '');
	UPDATE items SET dataset = COALESCE((SELECT json_extract(d.data, '$.dataset') FROM items d
			WHERE d.instance = items.origin AND d.key = items.key AND d.data IS NOT NULL AND json_valid(d.data)), '')
		WHERE data IS NULL AND origin != '' AND instance IN (SELECT id FROM instances WHERE dataset = '');`,
	// What the report draws (eaglet report, serve): a generated answer's
	// finish reason, when its request was sent, showed its first token and
	// finished (Unix ms), and the server URL that answered. Columns rather
	// than fields of the record: a million answers are charted by grouping
	// small integers instead of decoding every record, and output files
	// and hashes stay the answer's alone. Answers stored before get their
	// finish reason from their record (those with in_chash set, through its
	// index); their timing is unknown and stays 0. items_answers covers the
	// report's queries over answers (in_chash is set on every outcome of a
	// request-sending stage), so they read a small index, not the rows
	// with their records; in_chash ends it because SQLite covers a query
	// only with every column the query names.
	`ALTER TABLE items ADD COLUMN finish TEXT NOT NULL DEFAULT '';
	ALTER TABLE items ADD COLUMN sent_ms INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE items ADD COLUMN first_ms INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE items ADD COLUMN done_ms INTEGER NOT NULL DEFAULT 0;
	ALTER TABLE items ADD COLUMN url TEXT NOT NULL DEFAULT '';
	UPDATE items SET finish = COALESCE(json_extract(CAST(data AS TEXT), '$.generation.finish_reason'), '')
		WHERE in_chash != '' AND data IS NOT NULL AND json_valid(CAST(data AS TEXT));
	CREATE INDEX items_answers ON items (instance, live, status, ctok, ptok, finish, sent_ms, first_ms, done_ms, url, in_chash)
		WHERE in_chash != '';`,
	// The last `eaglet plan` of the spec, so the report compares it with
	// what the runs after it did: when it was made (Unix ms), a hash of
	// the spec file it was made for, and its figures as JSON. One row.
	`CREATE TABLE plans (
		made    INTEGER NOT NULL,
		spec_fp TEXT NOT NULL,
		body    TEXT NOT NULL
	);`,
	// Checkpoints a stage kind keeps of its own work, as JSON under keys
	// it chooses, so the store knows no kind's records. A handoff's
	// launches move here under the keys internal/launch writes
	// ("launch/" + the shard as nine digits + "/" + the version), with
	// its record's field names.
	`CREATE TABLE checkpoints (
		instance TEXT NOT NULL,
		key      TEXT NOT NULL,
		value    TEXT NOT NULL,
		PRIMARY KEY (instance, key)
	);
	INSERT INTO checkpoints SELECT instance, printf('launch/%09d/%s', shard, version),
		json_object('shard', shard, 'version', version, 'argv_hash', argv_hash, 'started_ns', started_at,
			'finished_ns', finished_at, 'exit_code', exit_code, 'duration_s', duration, 'log', log,
			'outputs', json(outputs), 'error', error)
		FROM launches;
	DROP TABLE launches;`,
	// EachOrdered sorts an instance's rows read in key order: the index by
	// ord is no longer read, and every shuffled row put it on a random page.
	`DROP INDEX items_ord;`,
	// What the evaluate stage measured: one row per request (or per group
	// of requests, from vLLM's counters) under the identity of what was
	// measured (drafter, target, sampling, prompt), which a rerun finds
	// instead of asking again; stage is the stage that last measured it,
	// and measured_ms when (Unix ms), for "the latest evaluation".
	`CREATE TABLE evaluations (
		id                TEXT PRIMARY KEY,
		stage             TEXT NOT NULL,
		measured_ms       INTEGER NOT NULL,
		drafter           TEXT NOT NULL,
		name              TEXT NOT NULL,
		target            TEXT NOT NULL,
		sampling          TEXT NOT NULL,
		prompt            TEXT NOT NULL,
		dataset           TEXT NOT NULL,
		turn              INTEGER NOT NULL,
		context_tokens    INTEGER NOT NULL,
		segment           TEXT NOT NULL,
		requests          INTEGER NOT NULL,
		completion_tokens INTEGER NOT NULL,
		verify            INTEGER NOT NULL,
		accepted          INTEGER NOT NULL,
		drafted           INTEGER NOT NULL,
		counted           INTEGER NOT NULL,
		per_position      TEXT NOT NULL,
		latency_us        INTEGER NOT NULL
	);
	CREATE INDEX evaluations_stage ON evaluations (stage, measured_ms);`,
}

// SchemaVersion is the schema this binary writes.
var SchemaVersion = len(migrations)

// ErrNewerSchema is returned when the store was written by a newer eaglet.
var ErrNewerSchema = errors.New("state store was written by a newer eaglet")

// LockedError says another eaglet process holds the store.
type LockedError struct {
	Path string
	PID  int
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("%s is in use by another eaglet run (pid %d); wait for it or stop it", e.Path, e.PID)
}

// Store is an open checkpoint store.
type Store struct {
	path string
	// w is the single writer connection: SQLite allows one writer, and
	// serialising in the pool beats retrying on SQLITE_BUSY.
	w *sql.DB
	// r serves concurrent reads, which WAL lets run beside the writer.
	r    *sql.DB
	lock *os.File
	// raw runs the writes of many rows below database/sql (rawTx).
	raw *rawWriter
	// sortBufs holds the buffers of sorts, each of sortMemory bytes (but
	// in tests) before it spills to temporary files beside the store.
	sortBufs *sortBufs
	// later batches the checkpoint writes a kill may lose (KeepLater).
	later *laterWriter
	// checkOnce runs the integrity check before the first write.
	checkOnce sync.Once
	checkErr  error
}

// Open opens (creating if needed) the store at path and migrates it.
func Open(path string) (*Store, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	// A URI filename: '#' and '?' in a directory name would otherwise cut
	// the path short and open another database.
	file := "file:" + strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23").Replace(path)
	if fi, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) || (err == nil && fi.Size() == 0) {
		if err := create(file); err != nil {
			return nil, fmt.Errorf("open state %s: %w", path, err)
		}
	}
	dsn := file + "?_journal_mode=WAL&_synchronous=NORMAL&_busy_timeout=10000&_foreign_keys=off"
	w, err := sql.Open("sqlite3", dsn+"&_txlock=immediate&_cache_size="+strconv.Itoa(-writerCacheKiB))
	if err != nil {
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	w.SetMaxOpenConns(1)
	w.SetConnMaxLifetime(0)
	// Checkpoint the WAL every ~40 MB rather than every 4 MB: each
	// checkpoint syncs the database file, and batches commit often. The
	// pragma counts pages, and stores made before newPageSize have 4 KiB ones.
	var page int
	if err := w.QueryRow(`PRAGMA page_size`).Scan(&page); err != nil {
		w.Close()
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	if _, err := w.Exec(`PRAGMA wal_autocheckpoint = ` + strconv.Itoa(walCheckpointBytes/max(page, 512))); err != nil {
		w.Close()
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	s := &Store{path: path, w: w, sortBufs: newSortBufs(sortMemory)}
	s.later = &laterWriter{s: s}
	if err := s.migrate(); err != nil {
		w.Close()
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	r, err := sql.Open("sqlite3", dsn+"&mode=ro")
	if err != nil {
		w.Close()
		return nil, fmt.Errorf("open state %s: %w", path, err)
	}
	r.SetMaxOpenConns(8)
	s.r = r
	return s, nil
}

// newPageSize is the page size of the stores Open creates. SQLite reads,
// writes to the WAL and checkpoints a page per system call (two for a WAL
// frame), and a pipeline of small records moves every page of its rows
// through all three: 16 KiB pages make a quarter of the calls that the
// default 4 KiB did. Stores made before keep their pages; SQLite fixes the
// size when the first table is made, and reads any.
const newPageSize = 16384

// writerCacheKiB is the writer's page cache (SQLite's default is 2,000
// KiB). An answer lands on a random page of each index it is in (keys and
// contents are hashes), so a generate run's commits read and rewrite pages
// all over its indexes: at the default, 125 pages of 16 KiB, most were
// read again at every commit (BenchmarkCommit_AnswerBatches: 38-46 us of
// CPU a row at 40,000 rows, 22-28 with 8 MiB). Readers' caches are left
// small: SQLite drops them whenever the store has changed.
const writerCacheKiB = 8 << 10

// walCheckpointBytes is how much WAL a commit lets grow before it copies
// the WAL into the database (wal_autocheckpoint, in pages of the store's size).
const walCheckpointBytes = 40 << 20

// create makes an empty store at file with newPageSize pages: the page
// size has to be set before the WAL mode the other connections ask for
// writes the database's first page.
func create(file string) error {
	db, err := sql.Open("sqlite3", file+"?_busy_timeout=10000")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`PRAGMA page_size = ` + strconv.Itoa(newPageSize)); err != nil {
		return fmt.Errorf("set page size: %w", err)
	}
	if _, err := db.Exec(`PRAGMA journal_mode = WAL`); err != nil {
		return fmt.Errorf("set WAL mode: %w", err)
	}
	return db.Close()
}

// Exists reports whether a store file is present at path.
func Exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func (s *Store) migrate() error {
	var v int
	if err := s.w.QueryRow(`PRAGMA user_version`).Scan(&v); err != nil {
		return err
	}
	if v > SchemaVersion {
		return fmt.Errorf("%w: schema version %d, this eaglet knows up to %d; upgrade eaglet or use another state path", ErrNewerSchema, v, SchemaVersion)
	}
	if v == 0 {
		if err := s.unversioned(); err != nil {
			return err
		}
	} else if v < SchemaVersion {
		if err := s.checkWritable(); err != nil {
			return err
		}
	}
	for ; v < SchemaVersion; v++ {
		tx, err := s.w.Begin()
		if err != nil {
			return err
		}
		if _, err := tx.Exec(migrations[v]); err != nil {
			tx.Rollback()
			return fmt.Errorf("migrate to schema %d: %w", v+1, err)
		}
		if _, err := tx.Exec(`PRAGMA user_version = ` + strconv.Itoa(v+1)); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
	}
	return nil
}

// Lock takes the store for one run. It fails with *LockedError naming the
// holder while another process has it; the lock dies with its process, so
// a killed run never leaves a stale lock behind. It fails with
// *DamagedError when the store does not pass its integrity check.
func (s *Store) Lock() error {
	lockPath := s.path + ".lock"
	f, err := os.OpenFile(lockPath, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("lock %s: %w", lockPath, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		buf := make([]byte, 32)
		n, _ := f.ReadAt(buf, 0)
		f.Close()
		pid, _ := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
		return &LockedError{Path: s.path, PID: pid}
	}
	if err := f.Truncate(0); err == nil {
		f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	s.lock = f
	return s.checkWritable()
}

// Snapshot writes a consistent copy of the store to path (which must not
// exist), readable while a run writes: plan works out what a run would do
// by doing the cheap part of it on such a copy.
func (s *Store) Snapshot(path string) error {
	if _, err := s.r.Exec(`VACUUM INTO ?`, path); err != nil {
		return fmt.Errorf("snapshot %s: %w", s.path, err)
	}
	return nil
}

// Holder reports the pid of the eaglet run holding the store at path, or 0
// when no run holds it, without taking the lock for longer than a check.
func Holder(path string) int {
	f, err := os.Open(path + ".lock")
	if err != nil {
		return 0
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return 0
	}
	buf := make([]byte, 32)
	n, _ := f.ReadAt(buf, 0)
	pid, _ := strconv.Atoi(strings.TrimSpace(string(buf[:n])))
	return max(pid, 1)
}

// Close releases the lock and closes the database.
func (s *Store) Close() error {
	errs := []error{s.FlushKept()}
	if s.lock != nil {
		syscall.Flock(int(s.lock.Fd()), syscall.LOCK_UN)
		s.lock.Close()
	}
	if s.raw != nil {
		errs = append(errs, s.raw.close())
	}
	if s.r != nil {
		errs = append(errs, s.r.Close())
	}
	if s.w != nil {
		errs = append(errs, s.w.Close())
	}
	return errors.Join(errs...)
}
