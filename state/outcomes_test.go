package state

import (
	"context"
	"reflect"
	"testing"
)

// TestCommitOutcomes_AsCommit: outcomes stored by CommitOutcomes, new or
// replacing an answer with its request, timing and order, are the rows
// Commit stores; an outcome with an answer's columns is stored whole.
func TestCommitOutcomes_AsCommit(t *testing.T) {
	s := openTemp(t)
	answer := Item{Key: "k1", Status: 0, FP: "old", InHash: "i1", OutHash: "o1", Data: []byte(`{"a":1}`), Ord: 9,
		PromptTokens: 3, CompletionTokens: 4, Chash: "c1", InChash: "ic1", Reused: true, Requests: 2, Retries: "http 503=1",
		Dataset: "d", Finish: "stop", Sent: 1, FirstToken: 2, Finished: 3, URL: "http://x"}
	tests := []struct {
		name  string
		items []Item
	}{
		{"plain", []Item{
			{Key: "k1", Status: 1, Reason: "keep: false", FP: "new", InHash: "i1"},
			{Key: "k2", Status: 0, FP: "new", InHash: "i2", OutHash: "i2", Origin: "load[d]", PromptTokens: 5, Chash: "c2", Dataset: "d"},
		}},
		{"an answer among them", []Item{
			{Key: "k2", Status: 0, FP: "new", InHash: "i2", OutHash: "i2", Origin: "load[d]"},
			answer,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, inst := range []string{"a", "b"} {
				if err := s.Commit(inst, []Item{answer}); err != nil {
					t.Fatal(err)
				}
			}
			if err := s.CommitOutcomes("a", tt.items); err != nil {
				t.Fatal(err)
			}
			if err := s.Commit("b", tt.items); err != nil {
				t.Fatal(err)
			}
			a, b := dumpRows(t, s, "a"), dumpRows(t, s, "b")
			if len(a) != len(tt.items) || !reflect.DeepEqual(a, b) {
				t.Errorf("CommitOutcomes stored\n%v\nCommit\n%v", a, b)
			}
		})
	}
}

// dumpRows is every column of an instance's rows but the instance and
// the time written, by key.
func dumpRows(t *testing.T, s *Store, inst string) [][]any {
	t.Helper()
	rows, err := s.r.Query(`SELECT key, live, status, reason, fp, in_hash, out_hash, origin, data, ord, ptok, ctok,
		attempts, chash, in_chash, reused, requests, retries, dataset, finish, sent_ms, first_ms, done_ms, url
		FROM items WHERE instance = ? ORDER BY key`, inst)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out [][]any
	for rows.Next() {
		vals := make([]any, 24)
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, vals)
	}
	return out
}

// TestDigester_AsOutputDigest: the digest of the live, done outcomes added
// in key order is OutputDigest's, and HasItems sees rows of any status.
func TestDigester_AsOutputDigest(t *testing.T) {
	s := openTemp(t)
	if had, err := s.HasItems("f"); err != nil || had {
		t.Fatalf("HasItems of an instance with no row: %v, %v", had, err)
	}
	items := []Item{{Key: "a", OutHash: "ha"}, {Key: "b", Status: 1, Reason: "keep: false"}, {Key: "c", OutHash: "hc"}}
	if err := s.CommitOutcomes("f", items); err != nil {
		t.Fatal(err)
	}
	d := NewDigester()
	for _, it := range items {
		if it.Status == 0 {
			d.Add(it.Key, it.OutHash)
		}
	}
	got, n := d.Sum()
	want, records, err := s.OutputDigest(context.Background(), "f")
	if err != nil || got != want || n != records {
		t.Errorf("Digester: %s of %d; OutputDigest %s of %d (%v)", got, n, want, records, err)
	}
	if had, err := s.HasItems("f"); err != nil || !had {
		t.Errorf("HasItems after a commit: %v, %v", had, err)
	}
}
