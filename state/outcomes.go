package state

import (
	"crypto/sha256"
	"fmt"
	"hash"
	"strings"
	"time"
)

// plainUpsertSQL inserts or replaces n outcomes that carry no answer
// (Item.plain) in one statement, binding only the 12 columns such an
// outcome fills where upsertSQL binds 24: the driver binds each parameter
// with a call into C. The instance and the time, the same for every row,
// are bound once (?1, ?2). A row replaced gets every other column back to
// its default, so it is the row upsertSQL would have left.
func plainUpsertSQL(n int) string {
	const row = "(?1, ?2, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
	rows := strings.TrimSuffix(strings.Repeat(row+",", n), ",")
	return `INSERT INTO items (instance, updated, key, status, reason, fp, in_hash, out_hash, origin, data, ptok, ctok, chash, dataset)
	VALUES ` + rows + `
	ON CONFLICT (instance, key) DO UPDATE SET live = 1, status = excluded.status, reason = excluded.reason,
	fp = excluded.fp, in_hash = excluded.in_hash, out_hash = excluded.out_hash, origin = excluded.origin,
	data = excluded.data, ord = 0, ptok = excluded.ptok, ctok = excluded.ctok,
	attempts = attempts + 1, updated = excluded.updated, chash = excluded.chash, in_chash = '',
	reused = 0, requests = 0, retries = '', dataset = excluded.dataset,
	finish = '', sent_ms = 0, first_ms = 0, done_ms = 0, url = ''`
}

// outcomeRows is how many outcomes one statement of CommitOutcomes
// stores. Each statement of a transaction after its first keeps the pages
// it changes aside in a statement journal (an upsert may abort half-way),
// spilled to a temporary file beyond 64 KiB: statements of 512 rows
// rather than 128 made a quarter fewer of a 100k pipeline's page writes
// (33.0k against 25.6k). The raw writer prepares it on first use, so no
// Open pays for its 6,000 parameters.
const outcomeRows = 4 * chunk

// plain reports whether an outcome fills only the columns plainUpsertSQL
// binds: no answer (content hash of its input, reuse, requests, timing)
// and no order.
func (it *Item) plain() bool {
	return it.InChash == "" && !it.Reused && it.Requests == 0 && it.Retries == "" && it.Ord == 0 &&
		it.Finish == "" && it.Sent == 0 && it.FirstToken == 0 && it.Finished == 0 && it.URL == ""
}

// CommitOutcomes stores many outcomes of an item stage in one transaction,
// as Commit does, for a stage that passes over its whole input at once
// (stages.Pure): outcomes that carry no answer (a filter's) are written
// through plainUpsertSQL, a statement of outcomeRows rows prepared once by
// the raw writer; any other outcome makes it fall back to Commit, which stores
// every column.
func (s *Store) CommitOutcomes(inst string, items []Item) error {
	for i := range items {
		if !items[i].plain() {
			return s.Commit(inst, items)
		}
	}
	now := time.Now().UnixNano()
	err := s.rawTx(func(w *rawWriter) error {
		for len(items) > 0 {
			n := min(len(items), outcomeRows)
			w.add(inst, now)
			for _, it := range items[:n] {
				w.add(it.Key, int64(it.Status), it.Reason, it.FP, it.InHash, it.OutHash, it.Origin, it.Data,
					int64(it.PromptTokens), int64(it.CompletionTokens), it.Chash, it.Dataset)
			}
			if err := w.run("plain upsert", plainUpsertSQL, n, n == outcomeRows); err != nil {
				return err
			}
			items = items[n:]
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("commit %s: %w", inst, err)
	}
	return nil
}

// Digester works out what OutputDigest will say of an output from its
// records as they are written, in key order, so a stage that wrote the
// whole output need not read it back.
type Digester struct {
	h       hash.Hash
	records int
	// line is the buffer each record's line is written to the hash from:
	// a string built per record was 5% of a pipeline's allocations.
	line []byte
}

// NewDigester starts an output digest.
func NewDigester() *Digester { return &Digester{h: sha256.New()} }

// Add adds a live, done record; records are added in key order.
func (d *Digester) Add(key, outHash string) {
	d.line = append(append(append(append(d.line[:0], key...), ' '), outHash...), '\n')
	d.h.Write(d.line)
	d.records++
}

// Sum is the digest and the number of records added.
func (d *Digester) Sum() (digest string, records int) { return digestSum(d.h), d.records }

// HasItems reports whether inst holds any row, live or not.
func (s *Store) HasItems(inst string) (bool, error) {
	var n int
	err := s.r.QueryRow(`SELECT COUNT(*) FROM (SELECT 1 FROM items WHERE instance = ? LIMIT 1)`, inst).Scan(&n)
	return n > 0, err
}
