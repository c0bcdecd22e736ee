package state

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

// Item is one record's outcome in one stage instance.
type Item struct {
	Key    string
	Status int
	Reason string
	// FP is the instance fingerprint the item was processed under.
	FP string
	// InHash is the hash of the input record it was made from.
	InHash string
	// OutHash is the hash of the output record.
	OutHash string
	// Origin is the instance whose row holds the data, when Data is nil
	// because the record was passed on unchanged.
	Origin string
	Data   []byte
	// Ord ranks the record in an ordered output (a shuffle).
	Ord              uint64
	PromptTokens     int
	CompletionTokens int
	// Chash hashes the output record's content without its provenance.
	Chash string
	// InChash is the content hash of the input a costly outcome was made
	// from; set only for stages whose outcomes are reused (generate).
	InChash string
	// Dataset is the record's dataset, set for instances that are not per
	// dataset, whose readers may be (Part).
	Dataset string
	// Reused is set when the outcome was not made again but found under
	// the same fingerprint and input content (ReusableOutcome).
	Reused bool
	// Requests counts the requests sent for this outcome, retries
	// included; Retries the retried failures by kind, as "kind=n,kind=n".
	Requests int
	Retries  string
	// Finish is a generated answer's finish reason; Sent, FirstToken and
	// Finished when its request ran (Unix ms), URL the server that answered.
	Finish                     string
	Sent, FirstToken, Finished int64
	URL                        string
}

// Row is a record read from an instance's live output.
type Row struct {
	Key    string
	Hash   string
	Origin string
	Data   []byte
	// Chash hashes the record's content without its provenance.
	Chash string
	// PromptTokens, CompletionTokens and Dataset are the row's, set by
	// EachOutputRef only.
	PromptTokens, CompletionTokens int
	Dataset                        string
}

const pageSize = 2000

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

func args(first []any, ids []string, rest ...any) []any {
	out := append([]any(nil), first...)
	for _, id := range ids {
		out = append(out, id)
	}
	return append(out, rest...)
}

// partSep separates an instance from a dataset in a Part; instance IDs
// never hold a space.
const partSep = " dataset="

// Part names the records of one dataset in the output of an instance that
// is not per dataset, for reading it from a per-dataset instance:
// generate[B1] after a dedupe over every dataset reads Part("dedupe", "B1").
// Every function taking upstream instances takes Parts too.
func Part(inst, dataset string) string { return inst + partSep + dataset }

// fromInstances returns the condition that a row (column prefix a, "u." or
// "") belongs to one of ids, instances or Parts, and its arguments.
func fromInstances(a string, ids []string) (string, []any) {
	var whole, partArgs []any
	var conds []string
	for _, id := range ids {
		if inst, ds, ok := strings.Cut(id, partSep); ok {
			conds = append(conds, "("+a+"instance = ? AND "+a+"dataset = ?)")
			partArgs = append(partArgs, inst, ds)
		} else {
			whole = append(whole, id)
		}
	}
	if len(whole) > 0 {
		conds = append([]string{a + "instance IN (" + placeholders(len(whole)) + ")"}, conds...)
	}
	return "(" + strings.Join(conds, " OR ") + ")", append(whole, partArgs...)
}

// join concatenates query arguments.
func join(parts ...[]any) []any {
	var out []any
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// resolved selects a row's own data or that of its origin.
const (
	resolvedCols = `u.key, u.out_hash, COALESCE(NULLIF(u.origin, ''), u.instance), COALESCE(u.data, d.data), u.chash`
	resolvedFrom = ` FROM items u LEFT JOIN items d ON u.data IS NULL AND d.instance = u.origin AND d.key = u.key`
	resolved     = resolvedCols + resolvedFrom
)

// EachOutput calls fn for every live, done record of the given instances
// in key order; where several instances hold a key, the one first by
// instance ID wins (Collapsed counts the others). Reads are paged so
// memory stays flat and the writer is never blocked.
func (s *Store) EachOutput(ctx context.Context, instances []string, fn func(Row) error) error {
	return s.mergeByKey(ctx, instances, resolved, scanResolved, true, fn)
}

// EachOutputRef calls fn for every record EachOutput visits, in the same
// order, with what its row says of it but not the record (Data is nil):
// neither the record nor the row holding it is read. Dataset is the
// record's dataset: the row's, or else its instance's.
func (s *Store) EachOutputRef(ctx context.Context, instances []string, fn func(Row) error) error {
	// The instances' datasets are looked up once here, not per row in SQL.
	datasets := map[string]string{}
	for _, id := range instances {
		inst, _, _ := strings.Cut(id, partSep)
		in, err := s.GetInstance(inst)
		if err != nil {
			return err
		}
		if in != nil {
			datasets[inst] = in.Dataset
		}
	}
	const cols = `u.key, u.out_hash, COALESCE(NULLIF(u.origin, ''), u.instance), u.chash, u.ptok, u.ctok, u.dataset, u.instance
		FROM items u`
	return s.mergeByKey(ctx, instances, cols, func(rows *sql.Rows) (Row, error) {
		var r Row
		var inst string
		err := rows.Scan(&r.Key, &r.Hash, &r.Origin, &r.Chash, intCol{&r.PromptTokens}, intCol{&r.CompletionTokens}, &r.Dataset, &inst)
		if r.Dataset == "" {
			r.Dataset = datasets[inst]
		}
		return r, err
	}, true, fn)
}

// EachCopy is EachOutput showing every copy of a key that several of the
// instances hold (the same conversation in two datasets), in key order and
// then in the order of instance names, for a stage that chooses between
// copies (dedupe).
func (s *Store) EachCopy(ctx context.Context, instances []string, fn func(Row) error) error {
	return s.mergeByKey(ctx, instances, resolved, scanResolved, false, fn)
}

// intCol scans an INTEGER column into an int: database/sql converts the
// driver's int64 to an int by formatting it and parsing the text, a cost
// per column of every row a key-ordered read passes on.
type intCol struct{ p *int }

// Scan takes the driver's int64.
func (c intCol) Scan(src any) error {
	v, ok := src.(int64)
	if !ok {
		return fmt.Errorf("an integer column holds %T", src)
	}
	*c.p = int(v)
	return nil
}

func scanResolved(rows *sql.Rows) (Row, error) {
	var r Row
	err := rows.Scan(&r.Key, &r.Hash, &r.Origin, &r.Data, &r.Chash)
	return r, err
}

// mergeByKey calls fn for the live, done rows of the given instances (or
// Parts) in key order and then in the order of instance names; with once,
// only the first row of a key. cols is what to select, ending with the
// FROM of items as u, and scan reads it; only, when set, narrows the
// rows further. Each instance is read in key order through its index, a
// page at a time, and the reads are merged here: ordering the union in
// SQL made SQLite sort what was left of every instance for each page,
// which grows with the square of the records.
func (s *Store) mergeByKey(ctx context.Context, instances []string, cols string, scan func(*sql.Rows) (Row, error),
	once bool, fn func(Row) error) error {
	return s.mergeByKeyWhere(ctx, instances, cols, narrow{}, scan, once, fn)
}

// narrow is what a merged read adds to its query: joins after the FROM and
// a condition on the rows, with their arguments.
type narrow struct {
	join     string
	joinArgs []any
	cond     string
	condArgs []any
}

func (s *Store) mergeByKeyWhere(ctx context.Context, instances []string, cols string, only narrow, scan func(*sql.Rows) (Row, error),
	once bool, fn func(Row) error) error {
	type cursor struct {
		id   string
		inst string
		rows []Row
		// page is the buffer rows is read into, reused for every page: a
		// new one per page was a tenth of a pipeline's allocations.
		page []Row
		last string
		done bool
	}
	curs := make([]*cursor, len(instances))
	for i, id := range instances {
		inst, _, _ := strings.Cut(id, partSep)
		curs[i] = &cursor{id: id, inst: inst}
	}
	slices.SortStableFunc(curs, func(a, b *cursor) int { return strings.Compare(a.inst, b.inst) })
	fill := func(c *cursor) error {
		from, fromArgs := fromInstances("u.", []string{c.id})
		q := `SELECT ` + cols + only.join + ` WHERE ` + from + `
			AND u.live = 1 AND u.status = 0 AND u.key > ?` + only.cond + ` ORDER BY u.key LIMIT ?`
		rows, err := s.r.QueryContext(ctx, q, join(only.joinArgs, fromArgs, []any{c.last}, only.condArgs, []any{pageSize})...)
		if err != nil {
			return err
		}
		defer rows.Close()
		clear(c.page)
		c.rows = c.page[:0]
		for rows.Next() {
			r, err := scan(rows)
			if err != nil {
				return err
			}
			c.rows = append(c.rows, r)
		}
		c.page = c.rows[:cap(c.rows)]
		c.done = len(c.rows) < pageSize
		if len(c.rows) > 0 {
			c.last = c.rows[len(c.rows)-1].Key
		}
		return rows.Err()
	}
	last, first := "", true
	for {
		var next *cursor
		for _, c := range curs {
			if len(c.rows) == 0 && !c.done {
				if err := fill(c); err != nil {
					return err
				}
			}
			if len(c.rows) > 0 && (next == nil || c.rows[0].Key < next.rows[0].Key) {
				next = c
			}
		}
		if next == nil {
			return nil
		}
		r := next.rows[0]
		next.rows = next.rows[1:]
		if once && !first && r.Key == last {
			continue // another instance's copy
		}
		last, first = r.Key, false
		if err := fn(r); err != nil {
			return err
		}
	}
}

// EachPending calls fn, in key order, for every input record that instance
// inst has no current outcome for under fingerprint fp: never processed,
// processed from a different input or configuration, failed, or skipped.
func (s *Store) EachPending(ctx context.Context, inst string, upstream []string, fp string, fn func(Row) error) error {
	if len(upstream) == 0 {
		return nil
	}
	// Each upstream instance is read by key and the reads merged, as
	// EachOutput does; with several (a stage over every dataset after
	// per-dataset ones) ordering their union in SQL grew with the square
	// of the records. Where two hold a key, the first pending copy by
	// instance name is the one processed.
	only := narrow{join: ` LEFT JOIN items o ON o.instance = ? AND o.key = u.key`, joinArgs: []any{inst},
		cond: ` AND (o.key IS NULL OR o.fp != ? OR o.in_hash != u.out_hash OR o.status >= 2)`, condArgs: []any{fp}}
	return s.mergeByKeyWhere(ctx, upstream, resolved, only, scanResolved, true, fn)
}

// EachOrdered calls fn for the live, done output of one instance in Ord
// order; only rows with a nonzero Ord are ordered output. It reads the
// rows in key order, the order a BatchWriter stored them in, and sorts
// them (spilling to temporary files beyond sortMemory): walking an index
// in Ord order instead read every row, and the row with its data, from a
// random page.
func (s *Store) EachOrdered(ctx context.Context, inst string, fn func(Row) error) error {
	byOrd := newSorter(filepath.Dir(s.path), s.sortBufs, true)
	defer byOrd.close()
	q := `SELECT ` + resolvedCols + `, u.ord` + resolvedFrom + ` WHERE u.instance = ? AND u.live = 1
		AND u.status = 0 AND u.key > ? ORDER BY u.key LIMIT ?`
	last := ""
	for {
		rows, err := s.r.QueryContext(ctx, q, inst, last, pageSize)
		if err != nil {
			return err
		}
		n := 0
		for rows.Next() {
			var it Item
			var ord int64
			if err := rows.Scan(&it.Key, &it.OutHash, &it.Origin, &it.Data, &it.Chash, &ord); err != nil {
				rows.Close()
				return err
			}
			n++
			last = it.Key
			if ord == 0 {
				continue // tested here, not in SQL, lest SQLite walk a partial index by ord
			}
			it.Ord = uint64(ord)
			if err := byOrd.add(&it); err != nil {
				rows.Close()
				return err
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if n < pageSize {
			break
		}
	}
	return byOrd.each(func(it *Item) error {
		return fn(Row{Key: it.Key, Hash: it.OutHash, Origin: it.Origin, Data: it.Data, Chash: it.Chash})
	})
}

// Collapse is a number of records of one instance that a reader of
// several (EachOutput) sees once, as those of another: the same key.
type Collapse struct {
	Instance, Into string
	N              int
}

// Collapsed counts, for the given instances, the live, done records that
// EachOutput passes over because an instance first by ID holds the same
// key, by instance and the instance that keeps them.
func (s *Store) Collapsed(instances []string) ([]Collapse, error) {
	if len(instances) < 2 {
		return nil, nil
	}
	in := placeholders(len(instances))
	// EXISTS filters every row with one probe per instance; the keeper is
	// looked up only for the few rows that have one (a subquery in the
	// select list is evaluated again wherever its alias is used).
	earlier := `FROM items v WHERE v.instance IN (` + in + `) AND v.instance < u.instance AND v.key = u.key
		AND v.live = 1 AND v.status = 0`
	rows, err := s.r.Query(`SELECT u.instance, (SELECT MIN(v.instance) `+earlier+`) AS first, COUNT(*)
		FROM items u WHERE u.instance IN (`+in+`) AND u.live = 1 AND u.status = 0 AND EXISTS (SELECT 1 `+earlier+`)
		GROUP BY u.instance, first ORDER BY u.instance, first`,
		args(nil, instances, args(nil, instances, args(nil, instances)...)...)...)
	if err != nil {
		return nil, fmt.Errorf("count collapsed records: %w", err)
	}
	defer rows.Close()
	var out []Collapse
	for rows.Next() {
		var c Collapse
		if err := rows.Scan(&c.Instance, &c.Into, &c.N); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// CountOutputs counts the live, done records of the given instances.
func (s *Store) CountOutputs(instances []string) (int, error) {
	if len(instances) == 0 {
		return 0, nil
	}
	var n int
	from, fromArgs := fromInstances("", instances)
	err := s.r.QueryRow(`SELECT COUNT(DISTINCT key) FROM items WHERE `+from+`
		AND live = 1 AND status = 0`, fromArgs...).Scan(&n)
	return n, err
}

// Reconcile makes an item stage's live output match its current input:
// outcomes whose input left (a lowered cap) or changed are set aside, not
// deleted, and set-aside outcomes whose input came back are live again, so
// nothing generated is ever thrown away. It works through the instance's
// keys in ranges, a short transaction each, so a million outcomes never
// hold the writer at once; it is idempotent, so a crash half-way is
// finished by the next run.
func (s *Store) Reconcile(inst string, upstream []string, fp string) error {
	if len(upstream) == 0 {
		return nil
	}
	ups, upArgs := fromInstances("u.", upstream)
	match := `EXISTS (SELECT 1 FROM items u WHERE ` + ups + `
		AND u.key = items.key AND u.live = 1 AND u.status = 0 AND u.out_hash = items.in_hash)`
	inRange := `instance = ? AND key > ? AND key <= ?`
	return s.byKeyRange(inst, func(tx *sql.Tx, from, to string) error {
		if _, err := tx.Exec(`UPDATE items SET live = 0 WHERE `+inRange+` AND live = 1 AND (fp != ? OR NOT `+match+`)`,
			join([]any{inst, from, to, fp}, upArgs)...); err != nil {
			return fmt.Errorf("reconcile %s: %w", inst, err)
		}
		if _, err := tx.Exec(`UPDATE items SET live = 1 WHERE `+inRange+` AND live = 0 AND fp = ? AND `+match,
			join([]any{inst, from, to, fp}, upArgs)...); err != nil {
			return fmt.Errorf("reconcile %s: %w", inst, err)
		}
		return nil
	})
}

// byKeyRange calls fn in one transaction per range of swapChunk of inst's
// keys, (from, to], in key order.
func (s *Store) byKeyRange(inst string, fn func(tx *sql.Tx, from, to string) error) error {
	from := ""
	for {
		var last sql.NullString
		err := s.r.QueryRow(`SELECT MAX(key) FROM (SELECT key FROM items WHERE instance = ? AND key > ?
			ORDER BY key LIMIT ?)`, inst, from, swapChunk).Scan(&last)
		if err != nil {
			return err
		}
		if !last.Valid {
			return nil
		}
		to := last.String
		tx, err := s.w.Begin()
		if err != nil {
			return err
		}
		if err := fn(tx, from, to); err != nil {
			tx.Rollback()
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		from = to
	}
}

// answerCols are the columns Commit binds for each row, after the
// instance and the time, which every row of a commit shares (?1, ?2).
const answerCols = `key, status, reason, fp, in_hash, out_hash, origin, data, ord, ptok, ctok,
	chash, in_chash, reused, requests, retries, dataset, finish, sent_ms, first_ms, done_ms, url`

// answerRow is one row's parameters in answerInsertSQL and upsertSQL.
const answerRow = "(?1, ?2, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"

// answerInsertSQL inserts n outcomes for keys the instance holds no row
// for, every column Commit stores. OR IGNORE, as batchInsertSQL, so the
// statement cannot abort half-way and keeps no statement journal (no
// column bound is ever NULL but data, which may be); Commit has made sure
// no key is there.
func answerInsertSQL(n int) string {
	return `INSERT OR IGNORE INTO items (instance, updated, ` + answerCols + `) VALUES ` +
		strings.TrimSuffix(strings.Repeat(answerRow+",", n), ",")
}

// upsertSQL stores n outcomes over rows the instance may hold already,
// counting the attempt. It may abort (a NOT NULL check of its update), so
// SQLite keeps the pages it changes in a statement journal: Commit uses it
// only for keys that are there.
func upsertSQL(n int) string {
	return `INSERT INTO items (instance, updated, ` + answerCols + `) VALUES ` +
		strings.TrimSuffix(strings.Repeat(answerRow+",", n), ",") + `
	ON CONFLICT (instance, key) DO UPDATE SET live = 1, status = excluded.status, reason = excluded.reason,
	fp = excluded.fp, in_hash = excluded.in_hash, out_hash = excluded.out_hash, origin = excluded.origin,
	data = excluded.data, ord = excluded.ord, ptok = excluded.ptok, ctok = excluded.ctok,
	attempts = attempts + 1, updated = excluded.updated, chash = excluded.chash, in_chash = excluded.in_chash,
	reused = excluded.reused, requests = excluded.requests, retries = excluded.retries, dataset = excluded.dataset,
	finish = excluded.finish, sent_ms = excluded.sent_ms, first_ms = excluded.first_ms, done_ms = excluded.done_ms,
	url = excluded.url`
}

// heldSQL names which of n keys an instance holds a row for.
func heldSQL(n int) string {
	return `SELECT key FROM items WHERE instance = ?1 AND key IN (` + placeholders(n) + `)`
}

// batchInsertSQL inserts n rows of a batch stage's output in one
// statement, binding only the columns such a row fills (the rest keep
// their defaults): the driver binds each parameter with a call into C,
// and binding all 24 was most of the cost of writing a batch stage.
// The instance and the time, the same for every row, are bound once
// (?1, ?2). A key already written is kept: the first put wins. OR IGNORE
// rather than ON CONFLICT DO NOTHING, which keeps the same row: a
// statement that may abort half-way keeps the pages it changes aside in a
// statement journal, a temporary file per transaction of several
// statements, which was a sixth of a pipeline's writes (one that ignores
// never aborts; no column bound here is ever NULL but data, which may be).
func batchInsertSQL(n int) string {
	const row = "(?1, ?2, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	rows := strings.TrimSuffix(strings.Repeat(row+",", n), ",")
	return `INSERT OR IGNORE INTO items (instance, updated, key, status, fp, in_hash, out_hash, origin, data, ord, ptok, ctok, chash, dataset)
	VALUES ` + rows
}

const chunk = 128

// answerRows is how many outcomes one statement of Commit stores, as
// outcomeRows for a pure stage's; a shorter rest is cut into statements
// of powers of two rows (sized), each prepared once too, so no commit
// prepares a statement of its own.
const answerRows = 4 * chunk

// sized calls stmt for consecutive runs of items, answerRows at a time and
// then the rest in powers of two, largest first.
func sized(items []Item, stmt func(run []Item) error) error {
	for len(items) > 0 {
		n := answerRows
		for n > len(items) {
			n /= 2
		}
		if err := stmt(items[:n]); err != nil {
			return err
		}
		items = items[n:]
	}
	return nil
}

// Commit stores a batch of outcomes of an item stage in one transaction:
// an outcome and its done mark are the same row, so a crash keeps both or
// neither. It first asks which keys the instance holds a row for (a
// retried failure, an answer made again under other options): the answers
// those rows held are kept in the cache and the rows updated; every other
// outcome is inserted by statements that cannot abort. So a first run's
// commits, all of new keys, keep no statement journal: when every outcome
// was upserted, each commit wrote the pages it changed a second time, to a
// temporary file, more page writes than the WAL took. Rows are bound on
// the writer's driver connection (rawWriter).
func (s *Store) Commit(inst string, items []Item) error {
	now := time.Now().UnixNano()
	err := s.rawTx(func(w *rawWriter) error {
		held, err := heldKeys(w, inst, items)
		if err != nil {
			return fmt.Errorf("look up rows: %w", err)
		}
		fresh, again := items, []Item(nil)
		if held != nil {
			fresh, again = nil, nil
			for _, it := range items {
				if held[it.Key] {
					again = append(again, it)
				} else {
					// A key twice in one batch is stored as upserted in
					// turn: inserted, then updated.
					held[it.Key] = true
					fresh = append(fresh, it)
				}
			}
			if err := keepSuperseded(w, inst, again); err != nil {
				return fmt.Errorf("keep superseded answers: %w", err)
			}
		}
		if err := putAnswers(w, "insert answers", answerInsertSQL, inst, now, fresh); err != nil {
			return err
		}
		return putAnswers(w, "upsert answers", upsertSQL, inst, now, again)
	})
	if err != nil {
		return fmt.Errorf("commit %s: %w", inst, err)
	}
	return nil
}

// heldKeys returns which keys of items inst holds a row for, or nil when
// it holds none of them and no key is there twice (a non-nil map, empty
// if need be, makes Commit look for keys twice in the batch).
func heldKeys(w *rawWriter, inst string, items []Item) (map[string]bool, error) {
	var held map[string]bool
	add := func(key string) {
		if held == nil {
			held = map[string]bool{}
		}
		held[key] = true
	}
	err := sized(items, func(run []Item) error {
		w.add(inst)
		for i := range run {
			w.add(run[i].Key)
		}
		return w.query("held keys", heldSQL, len(run), true, func(row []driver.Value) error {
			switch k := row[0].(type) {
			case string:
				add(k)
			case []byte:
				add(string(k))
			default:
				return fmt.Errorf("key of type %T", row[0])
			}
			return nil
		})
	})
	if err != nil || held != nil {
		return held, err
	}
	// Duplicates are rare (a record settled twice in one batch), so they
	// are looked for only when the store had none of the keys.
	seen := make(map[string]struct{}, len(items))
	for i := range items {
		if _, ok := seen[items[i].Key]; ok {
			return map[string]bool{}, nil
		}
		seen[items[i].Key] = struct{}{}
	}
	return nil, nil
}

// putAnswers stores items with statement sqlOf, in runs cut by sized.
// Ints are bound as int64, as in every write.
func putAnswers(w *rawWriter, name string, sqlOf func(n int) string, inst string, now int64, items []Item) error {
	return sized(items, func(run []Item) error {
		w.add(inst, now)
		for i := range run {
			it := &run[i]
			reused := int64(0)
			if it.Reused {
				reused = 1
			}
			w.add(it.Key, int64(it.Status), it.Reason, it.FP, it.InHash, it.OutHash, it.Origin, it.Data, int64(it.Ord),
				int64(it.PromptTokens), int64(it.CompletionTokens), it.Chash, it.InChash, reused, int64(it.Requests),
				it.Retries, it.Dataset, it.Finish, it.Sent, it.FirstToken, it.Finished, it.URL)
		}
		return w.run(name, sqlOf, len(run), true)
	})
}

// keepSuperseded copies into the cache the answers that items are about to
// replace with an answer under another fingerprint or to another input, so
// that setting an option back (temperature 0.9 -> 0.8 -> 0.9) finds them.
// Only costly outcomes (InChash set) are kept.
func keepSuperseded(w *rawWriter, inst string, items []Item) error {
	var costly []Item
	for _, it := range items {
		if it.InChash != "" {
			costly = append(costly, it)
		}
	}
	return sized(costly, func(run []Item) error {
		// One batch shares one fingerprint.
		w.add(inst)
		for i := range run {
			w.add(run[i].Key)
		}
		w.add(run[len(run)-1].FP)
		for i := range run {
			w.add(run[i].InChash)
		}
		return w.run("keep superseded", supersededSQL, len(run), true)
	})
}

// supersededSQL copies to the cache the answers of n keys of an instance
// that are about to be replaced by answers under another fingerprint or to
// another input (one batch shares one fingerprint). The keys are looked up
// through the (instance, key) index: a join on a VALUES list instead made
// SQLite scan every row of the instance at every commit.
func supersededSQL(n int) string {
	return `INSERT OR IGNORE INTO cache (fp, in_chash, data, ptok, ctok, created)
		SELECT fp, in_chash, data, ptok, ctok, updated FROM items
		WHERE instance = ? AND key IN (` + placeholders(n) + `) AND status = 0 AND in_chash != ''
		AND data IS NOT NULL AND fp != '' AND (fp != ? OR in_chash NOT IN (` + placeholders(n) + `))`
}

// reusableSQL finds an answer by content. "in_chash != ”" is what lets
// SQLite use the partial index items_reuse: without it every look-up
// scanned the whole table (TestStore_QueriesUseIndexes).
const reusableSQL = `SELECT data, ptok, ctok FROM items WHERE in_chash = ? AND in_chash != '' AND fp = ? AND status = 0
	AND data IS NOT NULL
	UNION ALL SELECT data, ptok, ctok FROM cache WHERE in_chash = ? AND fp = ? LIMIT 1`

// Reusable is an earlier outcome found for an input's content.
type Reusable struct {
	Data             []byte
	PromptTokens     int
	CompletionTokens int
}

// ReusableOutcome looks for a done outcome made under fingerprint fp from
// an input with content hash inChash: in any instance (the same prompt in a
// renamed or another dataset) or among superseded answers in the cache.
func (s *Store) ReusableOutcome(ctx context.Context, fp, inChash string) (*Reusable, error) {
	if inChash == "" || fp == "" {
		return nil, nil
	}
	var r Reusable
	err := s.r.QueryRowContext(ctx, reusableSQL, inChash, fp, inChash, fp).Scan(&r.Data, &r.PromptTokens, &r.CompletionTokens)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("look up an earlier answer: %w", err)
	}
	return &r, nil
}

// reusableAmongSQL names which of n contents have an answer under a
// fingerprint, through the same indexes as reusableSQL.
func reusableAmongSQL(n int) string {
	return `SELECT in_chash FROM items WHERE in_chash IN (` + placeholders(n) + `) AND in_chash != '' AND fp = ?
		AND status = 0 AND data IS NOT NULL
		UNION ALL SELECT in_chash FROM cache WHERE in_chash IN (` + placeholders(n) + `) AND fp = ?`
}

// amongRows is how many contents one query of ReusableAmong looks up. The
// reader's pages are dropped whenever the store has changed, so a query
// reads its index pages from the file again: 512 contents share them
// where 128 read nearly a page each.
const amongRows = 4 * chunk

// ReusableAmong returns which of chashes have an answer made under fp that
// ReusableOutcome would find: one query for a page of records about to be
// dispatched, rather than a look-up per record (a tenth of the client's
// CPU a request at 1,000 in flight, where almost none is found).
func (s *Store) ReusableAmong(ctx context.Context, fp string, chashes []string) (map[string]bool, error) {
	found := map[string]bool{}
	if fp == "" {
		return found, nil
	}
	for len(chashes) > 0 {
		n := min(len(chashes), amongRows)
		args := make([]any, 0, 2*n+2)
		for _, c := range chashes[:n] {
			args = append(args, c)
		}
		args = append(args, fp)
		args = append(args, args[:n]...)
		args = append(args, fp)
		rows, err := s.r.QueryContext(ctx, reusableAmongSQL(n), args...)
		if err != nil {
			return nil, fmt.Errorf("look up earlier answers: %w", err)
		}
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return nil, fmt.Errorf("look up earlier answers: %w", err)
			}
			found[c] = true
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, fmt.Errorf("look up earlier answers: %w", err)
		}
		chashes = chashes[n:]
	}
	return found, nil
}

// putBatch inserts records of a batch stage's output, batchRows to a
// statement (batchInsertSQL), in the raw writer's transaction. Ints are
// bound as int64, here as in every write: database/sql converts other
// integer types through reflection, and the driver takes no other.
func putBatch(w *rawWriter, inst string, items []Item) error {
	now := time.Now().UnixNano()
	for len(items) > 0 {
		n := min(len(items), batchRows)
		w.add(inst, now)
		for _, it := range items[:n] {
			w.add(it.Key, int64(it.Status), it.FP, it.InHash, it.OutHash, it.Origin, it.Data, int64(it.Ord),
				int64(it.PromptTokens), int64(it.CompletionTokens), it.Chash, it.Dataset)
		}
		if err := w.run("batch insert", batchInsertSQL, n, n == batchRows); err != nil {
			return fmt.Errorf("write %s: %w", inst, err)
		}
		items = items[n:]
	}
	return nil
}

// BatchWriter replaces a batch stage's whole output. It writes the new
// output aside, under a staging instance, in short transactions, so a long
// load, cap or merge never holds the store's one writer for more than a
// commit batch and other datasets keep committing; Commit then swaps it in.
//
// Records are written in key order whatever order the stage puts them in
// (sorted aside, through temporary files beyond sortMemory): the key index
// then grows at its end instead of taking every record on a random page,
// and since rows are stored in the order written, the readers that go by
// key (EachOutput, and the join of a pass-through row to the row with its
// data) read the table front to back.
type BatchWriter struct {
	s             *Store
	inst, staging string
	sorted        *sorter
	// digest is OutputDigest's of what was written, which holds while
	// one flush wrote everything (flushes).
	digest  *Digester
	flushes int
	// only, when set, says which records put are written (Only).
	only func(*Item) bool
}

// stagingPrefix marks the instance a batch stage's next output is written
// under until it is swapped in.
const stagingPrefix = "staging:"

// swapChunk is how many rows one transaction of a swap moves: about 50 ms.
const swapChunk = 5000

// BeginBatch starts replacing inst's output. Until Commit, readers see the
// previous output; a crash leaves it as it was (and the staged rows for the
// next BeginBatch to clear).
//
// An instance with no output yet has nothing to keep readable: its records
// are written in place, saving the swap (14% of a first load's time). The
// caller marks it unfinished first, so a crash half-way is made again, and
// the next BeginBatch, finding rows, stages as usual.
func (s *Store) BeginBatch(inst string) (*BatchWriter, error) {
	b := &BatchWriter{s: s, inst: inst, staging: stagingPrefix + inst, sorted: s.byKey(), digest: NewDigester()}
	if err := s.chunked(`DELETE FROM items WHERE rowid IN (SELECT rowid FROM items WHERE instance = ? LIMIT ?)`, b.staging); err != nil {
		return nil, fmt.Errorf("replace %s: clear an unfinished output: %w", inst, err)
	}
	var any int
	if err := s.w.QueryRow(`SELECT COUNT(*) FROM (SELECT 1 FROM items WHERE instance = ? LIMIT 1)`, inst).Scan(&any); err != nil {
		return nil, fmt.Errorf("replace %s: %w", inst, err)
	}
	if any == 0 {
		b.staging = inst
	}
	return b, nil
}

// byKey is a sorter of items by key.
func (s *Store) byKey() *sorter {
	return newSorter(filepath.Dir(s.path), s.sortBufs, false)
}

// chunked runs a statement over at most swapChunk rows at a time, each in
// its own transaction, until it changes no more rows; q takes the instance
// and the chunk size as its last two arguments.
func (s *Store) chunked(q string, first ...any) error {
	for {
		res, err := s.w.Exec(q, append(first, swapChunk)...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return err
		}
	}
}

// batchFlush is how many records a batch stage writes per transaction:
// small enough that another instance's commit never waits long for the
// writer (as long as a pure stage's, passFlush in engine), large enough to
// keep the per-transaction cost low: each commit writes again the last,
// part-filled pages of the table and its index to the WAL, and 512 records
// a transaction wrote a quarter more WAL frames than 2,048.
const batchFlush = 4 * batchRows

// batchRows is how many records one statement inserts (batchInsertSQL): a
// statement of 2,048 rows took 10 ms more to prepare at every Open for no
// gain. A multiple of chunk, so no transaction prepares a statement of its
// own for a tail.
const batchRows = 4 * chunk

// Put adds one output record. Of records put with the same key, the first
// is kept. Only the fields a batch stage's output has are stored: Key,
// Status, FP, InHash, OutHash, Origin, Data, Ord, the token counts, Chash
// and Dataset. What it keeps it copies: the caller may reuse it.Data.
func (b *BatchWriter) Put(it Item) error {
	return b.sorted.add(&it)
}

// Only makes the writer leave out, as it writes them, the records put
// (before or after) for which keep returns false, so a stage that learns
// only at the end of its input which records it passes on (cap's best by
// rank) need not read the input again. Of a key put twice, only the first
// put is shown to keep.
func (b *BatchWriter) Only(keep func(*Item) bool) { b.only = keep }

// flush writes what was put so far, in key order, a transaction per
// batchFlush records.
func (b *BatchWriter) flush() error {
	buf := make([]Item, 0, batchFlush)
	write := func() error {
		if len(buf) == 0 {
			return nil
		}
		err := b.s.rawTx(func(w *rawWriter) error { return putBatch(w, b.staging, buf) })
		buf = buf[:0]
		return err
	}
	last, first := "", true
	err := b.sorted.each(func(it *Item) error {
		if !first && it.Key == last {
			return nil // the first put of a key wins
		}
		if first {
			b.flushes++
		}
		last, first = it.Key, false
		if b.only != nil && !b.only(it) {
			return nil
		}
		if it.Status == 0 {
			b.digest.Add(it.Key, it.OutHash)
		}
		if buf = append(buf, *it); len(buf) == batchFlush {
			return write()
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("replace %s: %w", b.inst, err)
	}
	return write()
}

// Digest is what OutputDigest will say of the output once committed,
// worked out as it was written, so the caller need not read it all back;
// ok is false when records were put after the last Live, and then only
// OutputDigest knows.
func (b *BatchWriter) Digest() (digest string, records int, ok bool) {
	if b.flushes > 1 || b.sorted.pending() {
		return "", 0, false
	}
	digest, records = b.digest.Sum()
	return digest, records, true
}

// Live counts the distinct records written so far (a key put twice counts once).
func (b *BatchWriter) Live() (int, error) {
	if err := b.flush(); err != nil {
		return 0, err
	}
	var n int
	err := b.s.w.QueryRow(`SELECT COUNT(*) FROM items WHERE instance = ?`, b.staging).Scan(&n)
	return n, err
}

// Commit swaps the new output in and saves the instance's new state. The
// instance is saved first, so that a crash during the swap leaves it
// unfinished (in.Status is "running") and the next run makes it again.
func (b *BatchWriter) Commit(s *Store, in *Instance) error {
	if err := b.flush(); err != nil {
		return err
	}
	if err := s.PutInstance(in); err != nil {
		return err
	}
	if b.staging == b.inst {
		return nil // written in place
	}
	// Rows not re-emitted are gone for good: a batch stage can remake them.
	if err := s.chunked(`DELETE FROM items WHERE rowid IN (SELECT rowid FROM items WHERE instance = ? LIMIT ?)`, b.inst); err != nil {
		return fmt.Errorf("replace %s: %w", b.inst, err)
	}
	if err := s.chunked(`UPDATE items SET instance = ? WHERE rowid IN (SELECT rowid FROM items WHERE instance = ? LIMIT ?)`, b.inst, b.staging); err != nil {
		return fmt.Errorf("replace %s: %w", b.inst, err)
	}
	return nil
}

// Rollback abandons the new output.
func (b *BatchWriter) Rollback() {
	b.sorted.close()
	b.s.chunked(`DELETE FROM items WHERE rowid IN (SELECT rowid FROM items WHERE instance = ? LIMIT ?)`, b.staging)
}

// Count is the number of live records of one status and reason.
type Count struct {
	Status           int
	Reason           string
	N                int
	PromptTokens     int64
	CompletionTokens int64
	// Reused counts the records among N answered by an earlier outcome.
	Reused int
}

// Counts tallies an instance's live records by status and reason.
func (s *Store) Counts(inst string) ([]Count, error) {
	return counts(s.r, inst)
}

// CountsNow takes a snapshot of the store and returns at once with a
// function that waits for Counts of inst in that snapshot: a resumed run
// dispatches while a million outcomes are counted for its progress, and
// what it commits meanwhile is not counted as earlier work.
func (s *Store) CountsNow(inst string) (wait func() ([]Count, error), err error) {
	tx, err := s.r.Begin()
	if err != nil {
		return nil, err
	}
	// A read transaction takes its snapshot at its first read.
	var n int
	if err := tx.QueryRow(`SELECT COUNT(*) FROM instances`).Scan(&n); err != nil {
		tx.Rollback()
		return nil, err
	}
	done := make(chan struct{})
	var (
		out      []Count
		countErr error // not err, which the return below writes while this runs
	)
	go func() {
		defer close(done)
		out, countErr = counts(tx, inst)
		tx.Rollback()
	}()
	return func() ([]Count, error) {
		<-done
		return out, countErr
	}, nil
}

type querier interface {
	Query(q string, args ...any) (*sql.Rows, error)
}

func counts(db querier, inst string) ([]Count, error) {
	rows, err := db.Query(`SELECT status, reason, COUNT(*), SUM(ptok), SUM(ctok), SUM(reused) FROM items
		WHERE instance = ? AND live = 1 GROUP BY status, reason ORDER BY status, reason`, inst)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []Count
	for rows.Next() {
		var c Count
		if err := rows.Scan(&c.Status, &c.Reason, &c.N, &c.PromptTokens, &c.CompletionTokens, &c.Reused); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// Requests sums the requests an instance's live outcomes took and their
// retried failures by kind.
func (s *Store) Requests(inst string) (requests int, retries map[string]int, err error) {
	rows, err := s.r.Query(`SELECT requests, retries FROM items WHERE instance = ? AND live = 1 AND requests > 0`, inst)
	if err != nil {
		return 0, nil, err
	}
	defer rows.Close()
	retries = map[string]int{}
	for rows.Next() {
		var n int
		var kinds string
		if err := rows.Scan(&n, &kinds); err != nil {
			return 0, nil, err
		}
		requests += n
		for k, c := range ParseRetries(kinds) {
			retries[k] += c
		}
	}
	return requests, retries, rows.Err()
}

// FormatRetries writes retried failures by kind as stored: "kind=n,kind=n",
// sorted by kind.
func FormatRetries(m map[string]int) string {
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	var b strings.Builder
	for _, k := range kinds {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%d", strings.NewReplacer(",", ";", "=", ":").Replace(k), m[k])
	}
	return b.String()
}

// ParseRetries reads what FormatRetries wrote.
func ParseRetries(s string) map[string]int {
	m := map[string]int{}
	for _, part := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(part, "=")
		if n, err := strconv.Atoi(v); ok && err == nil {
			m[k] += n
		}
	}
	return m
}

// CompletionLengths returns the completion tokens of up to n live, done
// outcomes of inst. Keys are content hashes, so the first n by key are a
// fair sample.
func (s *Store) CompletionLengths(inst string, n int) ([]int, error) {
	rows, err := s.r.Query(`SELECT ctok FROM items WHERE instance = ? AND live = 1 AND status = 0
		ORDER BY key LIMIT ?`, inst, n)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []int
	for rows.Next() {
		var c int
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}

// AnswerPace returns when the last of inst's live, done outcomes with
// timings finished (Unix milliseconds, 0 when none has timings) and their
// completion tokens per second of request time, from sent to done.
func (s *Store) AnswerPace(inst string) (lastMs int64, tokensPerSecond float64, err error) {
	var ctok, ms int64
	err = s.r.QueryRow(`SELECT COALESCE(MAX(done_ms), 0), COALESCE(SUM(ctok), 0), COALESCE(SUM(done_ms - sent_ms), 0)
		FROM items WHERE instance = ? AND live = 1 AND status = 0 AND sent_ms > 0 AND done_ms >= sent_ms`, inst).Scan(&lastMs, &ctok, &ms)
	if err != nil {
		return 0, 0, fmt.Errorf("answer pace of %s: %w", inst, err)
	}
	if ms > 0 {
		tokensPerSecond = float64(ctok) * 1000 / float64(ms)
	}
	return lastMs, tokensPerSecond, nil
}

// ThroughputOf returns the output throughput the endpoint gave the given
// instances: the completion tokens of their last answers (at most limit,
// latest first, live or set aside since: all were work the server did)
// over the time at least one of them was in flight, so the hours between
// two runs do not count, and how many answers that is.
func (s *Store) ThroughputOf(ctx context.Context, instances []string, limit int) (tokensPerSecond float64, answers int, err error) {
	if len(instances) == 0 {
		return 0, 0, nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT sent_ms, done_ms, ctok FROM items
		WHERE instance IN (`+placeholders(len(instances))+`) AND status = 0 AND sent_ms > 0 AND done_ms >= sent_ms
		ORDER BY done_ms DESC LIMIT ?`, args(nil, instances, limit)...)
	if err != nil {
		return 0, 0, fmt.Errorf("throughput: %w", err)
	}
	defer rows.Close()
	type span struct{ from, to int64 }
	var spans []span
	var tokens int64
	for rows.Next() {
		var sp span
		var ctok int64
		if err := rows.Scan(&sp.from, &sp.to, &ctok); err != nil {
			return 0, 0, fmt.Errorf("throughput: %w", err)
		}
		spans, tokens = append(spans, sp), tokens+ctok
	}
	if err := rows.Err(); err != nil {
		return 0, 0, fmt.Errorf("throughput: %w", err)
	}
	slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.from, b.from) })
	var busy, end int64
	for i, sp := range spans {
		switch {
		case i == 0 || sp.from > end:
			busy += sp.to - sp.from
			end = sp.to
		case sp.to > end:
			busy += sp.to - end
			end = sp.to
		}
	}
	if busy <= 0 {
		return 0, len(spans), nil
	}
	return float64(tokens) * 1000 / float64(busy), len(spans), nil
}

// AnswersSentBy counts inst's live, done outcomes whose request was sent
// at or before ms (Unix milliseconds), and their completion tokens.
func (s *Store) AnswersSentBy(inst string, ms int64) (n, completionTokens int64, err error) {
	err = s.r.QueryRow(`SELECT COUNT(*), COALESCE(SUM(ctok), 0) FROM items
		WHERE instance = ? AND live = 1 AND status = 0 AND sent_ms > 0 AND sent_ms <= ?`, inst, ms).Scan(&n, &completionTokens)
	if err != nil {
		return 0, 0, fmt.Errorf("answers of %s sent by %d: %w", inst, ms, err)
	}
	return n, completionTokens, nil
}

// SupersededAnswers counts an instance's done outcomes that are no longer
// live (an option changed since, or the record left its input) and their
// prompt and completion tokens: how long prompts and answers ran before
// the change.
func (s *Store) SupersededAnswers(inst string) (n, promptTokens, completionTokens int64, err error) {
	err = s.r.QueryRow(`SELECT COUNT(*), COALESCE(SUM(ptok), 0), COALESCE(SUM(ctok), 0) FROM items
		WHERE instance = ? AND live = 0 AND status = 0`, inst).Scan(&n, &promptTokens, &completionTokens)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("superseded answers of %s: %w", inst, err)
	}
	return n, promptTokens, completionTokens, nil
}

// OutputDigest hashes the keys and content hashes of an instance's live,
// done output, so a change anywhere in it changes the digest, and counts
// that output in the same pass.
func (s *Store) OutputDigest(ctx context.Context, inst string) (digest string, records int, err error) {
	d := NewDigester()
	last := ""
	for {
		rows, err := s.r.QueryContext(ctx, `SELECT key, out_hash FROM items WHERE instance = ? AND live = 1
			AND status = 0 AND key > ? ORDER BY key LIMIT ?`, inst, last, pageSize*10)
		if err != nil {
			return "", 0, err
		}
		n := 0
		for rows.Next() {
			var k, oh string
			if err := rows.Scan(&k, &oh); err != nil {
				rows.Close()
				return "", 0, err
			}
			d.Add(k, oh)
			last = k
			n++
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return "", 0, err
		}
		if n < pageSize*10 {
			digest, records = d.Sum()
			return digest, records, nil
		}
	}
}

// digestSum is an output digest's value.
func digestSum(h hash.Hash) string {
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Invalidate marks every outcome of inst as made under no fingerprint, so
// the next pass processes all its records again (run --force).
func (s *Store) Invalidate(inst string) error {
	return s.byKeyRange(inst, func(tx *sql.Tx, from, to string) error {
		_, err := tx.Exec(`UPDATE items SET fp = '' WHERE instance = ? AND key > ? AND key <= ?`, inst, from, to)
		return err
	})
}

// Pending is what an item stage has left to do.
type Pending struct {
	// Records counts the input records EachPending would visit.
	Records int
	// Reusable counts those of them whose content already has a done
	// outcome under the same fingerprint (ReusableOutcome finds it).
	Reusable int
}

// CountPending counts what EachPending would visit and, of that, what an
// earlier outcome under fp can answer.
func (s *Store) CountPending(inst string, upstream []string, fp string) (Pending, error) {
	var p Pending
	if len(upstream) == 0 {
		return p, nil
	}
	from, fromArgs := fromInstances("u.", upstream)
	err := s.r.QueryRow(`SELECT COUNT(*), COALESCE(SUM(u.chash != '' AND (
			EXISTS (SELECT 1 FROM items c WHERE c.in_chash = u.chash AND c.in_chash != '' AND c.fp = ? AND c.status = 0
				AND c.data IS NOT NULL)
			OR EXISTS (SELECT 1 FROM cache c WHERE c.in_chash = u.chash AND c.fp = ?))), 0)
		FROM (SELECT u.key, MIN(u.chash) AS chash FROM items u LEFT JOIN items o ON o.instance = ? AND o.key = u.key
		WHERE `+from+` AND u.live = 1 AND u.status = 0
		AND (o.key IS NULL OR o.fp != ? OR o.in_hash != u.out_hash OR o.status >= 2) GROUP BY u.key) u`,
		join([]any{fp, fp, inst}, fromArgs, []any{fp})...).Scan(&p.Records, &p.Reusable)
	return p, err
}

// EachByKey calls fn for the live, done records of the given instances
// whose keys are listed, in no particular order.
func (s *Store) EachByKey(ctx context.Context, instances, keys []string, fn func(Row) error) error {
	if len(instances) == 0 || len(keys) == 0 {
		return nil
	}
	from, a := fromInstances("u.", instances)
	q := `SELECT ` + resolved + ` WHERE ` + from + `
		AND u.key IN (` + placeholders(len(keys)) + `) AND u.live = 1 AND u.status = 0`
	for _, k := range keys {
		a = append(a, k)
	}
	return s.eachRow(ctx, q, a, fn)
}

// eachRow runs a query selecting resolved rows and calls fn for each.
func (s *Store) eachRow(ctx context.Context, q string, args []any, fn func(Row) error) error {
	rows, err := s.r.QueryContext(ctx, q, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var r Row
		if err := rows.Scan(&r.Key, &r.Hash, &r.Origin, &r.Data, &r.Chash); err != nil {
			return err
		}
		if err := fn(r); err != nil {
			return err
		}
	}
	return rows.Err()
}
