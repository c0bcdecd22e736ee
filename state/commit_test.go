package state

import (
	"database/sql"
	"fmt"
	"reflect"
	"testing"
)

// TestCommit_AsUpsertsInTurn: whatever mix of keys a batch holds (new ones,
// ones stored before under the same or another fingerprint, a key twice,
// more than one statement's worth), Commit leaves the rows and the cache
// of superseded answers that a row at a time leaves: the answers the batch
// replaces kept in the cache first, then each outcome upserted in turn,
// which counts the attempt of a row stored again.
func TestCommit_AsUpsertsInTurn(t *testing.T) {
	answer := func(key, fp, chash string) Item {
		return Item{Key: key, FP: fp, InHash: "i" + key, OutHash: "o" + key, Data: []byte(`{"k":"` + key + `"}`),
			PromptTokens: 3, CompletionTokens: 5, Chash: "c" + key, InChash: chash, Requests: 1, Retries: "http 503=1",
			Dataset: "d", Finish: "stop", Sent: 1, FirstToken: 2, Finished: 3, URL: "http://x/v1"}
	}
	many := func(prefix string, n int) []Item {
		var out []Item
		for i := range n {
			out = append(out, answer(fmt.Sprintf("%s%04d", prefix, i), "fp", fmt.Sprintf("%s-c%d", prefix, i)))
		}
		return out
	}
	before := []Item{answer("a", "old", "ca"), answer("b", "fp", "cb"), {Key: "f", Status: 2, Reason: "http 500", FP: "fp", InChash: "cf"}}
	failedAgain := answer("f", "fp", "cf")
	failedAgain.Status, failedAgain.Reason, failedAgain.Data = 2, "http 502", nil
	tests := []struct {
		name  string
		batch []Item
	}{
		{"new keys, several statements' worth", many("n", answerRows+answerRows/2+37)},
		{"keys stored before", []Item{answer("a", "fp", "ca"), answer("b", "fp", "cb2"), answer("f", "fp", "cf")}},
		{"a mix", append(many("m", 9), answer("a", "fp", "ca"), answer("z", "fp", "cz"), failedAgain)},
		{"a new key twice", []Item{answer("x", "fp", "cx"), answer("y", "fp", "cy"), answer("x", "fp", "cx2")}},
		{"a stored key twice", []Item{answer("a", "fp", "ca2"), answer("a", "fp", "ca3")}},
		{"an outcome with no answer", []Item{{Key: "a", Status: 1, Reason: "keep: false", FP: "fp", InHash: "ia"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, want := openTemp(t), openTemp(t)
			for _, s := range []*Store{got, want} {
				if err := s.Commit("g", before); err != nil {
					t.Fatal(err)
				}
			}
			if err := got.Commit("g", tt.batch); err != nil {
				t.Fatal(err)
			}
			rowAtATime(t, want, "g", tt.batch)
			if g, w := dumpRows(t, got, "g"), dumpRows(t, want, "g"); !reflect.DeepEqual(g, w) {
				t.Errorf("rows:\n%v\nwant\n%v", g, w)
			}
			if g, w := dumpCache(t, got), dumpCache(t, want); !reflect.DeepEqual(g, w) {
				t.Errorf("cache:\n%v\nwant\n%v", g, w)
			}
		})
	}
}

// rowAtATime stores a batch in one transaction through database/sql, a
// statement a row: every answer the batch replaces kept, then each outcome
// upserted in turn.
func rowAtATime(t *testing.T, s *Store, inst string, batch []Item) {
	t.Helper()
	tx, err := s.w.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for _, it := range batch {
		if it.InChash == "" {
			continue
		}
		if _, err := tx.Exec(supersededSQL(1), inst, it.Key, it.FP, it.InChash); err != nil {
			t.Fatal(err)
		}
	}
	for _, it := range batch {
		if _, err := tx.Exec(upsertSQL(1), inst, int64(0), it.Key, int64(it.Status), it.Reason, it.FP, it.InHash, it.OutHash,
			it.Origin, it.Data, int64(it.Ord), int64(it.PromptTokens), int64(it.CompletionTokens), it.Chash, it.InChash,
			it.Reused, int64(it.Requests), it.Retries, it.Dataset, it.Finish, it.Sent, it.FirstToken, it.Finished, it.URL); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
}

// dumpCache is the cache of superseded answers but the time each was made.
func dumpCache(t *testing.T, s *Store) [][]any {
	t.Helper()
	rows, err := s.r.Query(`SELECT fp, in_chash, data, ptok, ctok FROM cache ORDER BY fp, in_chash`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals := make([]any, 5)
		if err := rows.Scan(&vals[0], &vals[1], &vals[2], &vals[3], &vals[4]); err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStore_WriterCache: the writer keeps writerCacheKiB of pages, what
// commits of answers scattered over the indexes need; readers keep
// SQLite's default.
func TestStore_WriterCache(t *testing.T) {
	s := openTemp(t)
	for _, c := range []struct {
		name string
		db   interface {
			QueryRow(string, ...any) *sql.Row
		}
		want int
	}{{"writer", s.w, -writerCacheKiB}, {"reader", s.r, -2000}} {
		var got int
		if err := c.db.QueryRow(`PRAGMA cache_size`).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: cache_size %d; want %d", c.name, got, c.want)
		}
	}
}
