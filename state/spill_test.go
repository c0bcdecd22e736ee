package state

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestSorter_OrdersAcrossRuns sorts more items than fit in its memory, so
// most wait in runs on disk, and gets every field back, in key or (ord,
// key) order, equal items in the order they were added.
func TestSorter_OrdersAcrossRuns(t *testing.T) {
	for _, tc := range []struct {
		name  string
		byOrd bool
		limit int
	}{
		{"by key, in memory", false, 1 << 20},
		{"by key, spilled", false, 2 << 10},
		{"by ord, spilled", true, 2 << 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			rng := rand.New(rand.NewPCG(1, 2))
			var in []Item
			for i := range 1000 {
				it := Item{Key: fmt.Sprintf("k%03d", rng.IntN(300)), Ord: uint64(rng.IntN(50)), Reason: fmt.Sprint(i),
					FP: "fp", InHash: "ih", OutHash: "oh", Origin: "load[d]", Chash: "c", InChash: "ic", Dataset: "d",
					Retries: "http 503=1", Finish: "stop", URL: "http://x", Status: i % 4, PromptTokens: i, CompletionTokens: -i,
					Requests: 2, Sent: 1 << 40, FirstToken: 5, Finished: 6, Reused: i%2 == 0}
				switch i % 3 {
				case 0:
					it.Data = []byte(fmt.Sprintf(`{"i":%d}`, i))
				case 1:
					it.Data = []byte{} // an empty record, not a pass-through
				}
				in = append(in, it)
			}
			s := newSorter(dir, newSortBufs(tc.limit), tc.byOrd)
			for i := range in {
				if err := s.add(&in[i]); err != nil {
					t.Fatal(err)
				}
			}
			if tc.limit < 1<<20 && len(s.runs) < 10 {
				t.Fatalf("%d runs on disk; the test wants many", len(s.runs))
			}
			want := slices.Clone(in)
			slices.SortStableFunc(want, func(a, b Item) int {
				if tc.byOrd && a.Ord != b.Ord {
					return cmp.Compare(a.Ord, b.Ord)
				}
				return strings.Compare(a.Key, b.Key)
			})
			var got []Item
			if err := s.each(func(it *Item) error {
				got = append(got, *it)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d items back, want %d", len(got), len(want))
			}
			for i := range want {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("item %d:\n got %+v\nwant %+v", i, got[i], want[i])
				}
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Errorf("files left in the store's directory: %v", left)
			}
		})
	}
}

// TestBatchWriter_KeyOrderFirstWins puts records in random order, a key
// twice, through a sort that spills: the first put of a key is the one
// stored, and the rows are stored in key order, so reading by key reads
// the table front to back.
func TestBatchWriter_KeyOrderFirstWins(t *testing.T) {
	s := openTemp(t)
	s.sortBufs = newSortBufs(4 << 10)
	for round := range 2 { // the second replaces the first, through staging
		bw, err := s.BeginBatch("load[d]")
		if err != nil {
			t.Fatal(err)
		}
		for _, i := range rand.New(rand.NewPCG(3, uint64(round))).Perm(500) {
			if err := bw.Put(Item{Key: fmt.Sprintf("k%03d", i), OutHash: "h", Data: fmt.Appendf(nil, `{"r":%d}`, round)}); err != nil {
				t.Fatal(err)
			}
			if i == 7 {
				if err := bw.Put(Item{Key: "k007", OutHash: "h", Data: []byte(`{"second":true}`)}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if n, err := bw.Live(); err != nil || n != 500 {
			t.Fatalf("round %d: Live = %d, %v; want 500", round, n, err)
		}
		if err := bw.Commit(s, &Instance{ID: "load[d]", Stage: "load", Status: StatusDone}); err != nil {
			t.Fatal(err)
		}
		digest, records, ok := bw.Digest()
		want, wantRecords, err := s.OutputDigest(context.Background(), "load[d]")
		if err != nil || !ok || digest != want || records != wantRecords {
			t.Errorf("round %d: the writer's digest %s of %d records (%v); OutputDigest %s of %d (%v)",
				round, digest, records, ok, want, wantRecords, err)
		}
	}
	var got []string
	if err := s.EachOutput(context.Background(), []string{"load[d]"}, func(r Row) error {
		got = append(got, r.Key+" "+string(r.Data))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 500 || got[7] != `k007 {"r":1}` {
		t.Fatalf("%d records, k007 is %q; want 500 and the first put of the second round", len(got), got[7])
	}
	rows, err := s.r.Query(`SELECT key FROM items WHERE instance = 'load[d]' ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var keys []string
	for rows.Next() {
		var k string
		rows.Scan(&k)
		keys = append(keys, k)
	}
	if !slices.IsSorted(keys) || len(keys) != 500 {
		t.Errorf("rows are not stored in key order: %d rows, first %v", len(keys), keys[:min(5, len(keys))])
	}
}

// TestEachOrdered_SortsBeyondMemory reads a shuffled output larger than a
// sort's memory in (ord, key) order, each pass-through row with its
// origin's data, and leaves out unordered and dropped rows.
func TestEachOrdered_SortsBeyondMemory(t *testing.T) {
	s := openTemp(t)
	s.sortBufs = newSortBufs(2 << 10)
	var load, merge []Item
	type rec struct {
		ord uint64
		key string
	}
	var want []rec
	for i := range 400 {
		k := fmt.Sprintf("k%03d", i)
		load = append(load, Item{Key: k, OutHash: "h" + k, Data: fmt.Appendf(nil, `{"n":%d}`, i)})
		it := Item{Key: k, OutHash: "h" + k, Origin: "load[d]", Ord: uint64((i*7919)%97 + 1)}
		switch {
		case i%50 == 0:
			it.Ord = 0 // not ordered output
		case i%40 == 0:
			it.Status = 1 // dropped
		default:
			want = append(want, rec{it.Ord, k})
		}
		merge = append(merge, it)
	}
	if err := s.Commit("load[d]", load); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit("merge", merge); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(want, func(a, b rec) int {
		return cmp.Or(cmp.Compare(a.ord, b.ord), strings.Compare(a.key, b.key))
	})
	var got []string
	if err := s.EachOrdered(context.Background(), "merge", func(r Row) error {
		got = append(got, r.Key+" "+r.Origin+" "+string(r.Data))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows, want %d", len(got), len(want))
	}
	for i, w := range want {
		var n int
		fmt.Sscanf(w.key, "k%d", &n)
		if exp := fmt.Sprintf(`%s load[d] {"n":%d}`, w.key, n); got[i] != exp {
			t.Fatalf("row %d: %q, want %q", i, got[i], exp)
		}
	}
}

// TestBatchWriter_DigestAfterLatePut: records put after Live are written
// by a second flush, whose keys the first's digest did not see in order,
// so the writer leaves the digest to OutputDigest.
func TestBatchWriter_DigestAfterLatePut(t *testing.T) {
	s := openTemp(t)
	bw, err := s.BeginBatch("cap[d]")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"b", "a"} {
		if err := bw.Put(Item{Key: k, OutHash: "h" + k}); err != nil {
			t.Fatal(err)
		}
		if _, err := bw.Live(); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, ok := bw.Digest(); ok {
		t.Error("Digest is ok after two flushes")
	}
}

// TestBatchWriter_KilledBeforeCommit: a first output written in place (no
// swap) whose process dies before Commit leaves rows but no done
// instance; the next BeginBatch stages beside them and its Commit leaves
// exactly the new output, and no sort's temporary file stays behind.
func TestBatchWriter_KilledBeforeCommit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "s.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s.sortBufs = newSortBufs(4 << 10)
	bw, err := s.BeginBatch("load[d]")
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2000 {
		if err := bw.Put(Item{Key: fmt.Sprintf("old%04d", (i*7)%2000), OutHash: "h", Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bw.Live(); err != nil { // written in place
		t.Fatal(err)
	}
	s.Close() // killed: no Commit
	if s, err = Open(path); err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	s.sortBufs = newSortBufs(4 << 10)
	if bw, err = s.BeginBatch("load[d]"); err != nil {
		t.Fatal(err)
	}
	for i := range 500 {
		if err := bw.Put(Item{Key: fmt.Sprintf("new%04d", (i*3)%500), OutHash: "h", Data: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bw.Live(); err != nil {
		t.Fatal(err)
	}
	if err := bw.Commit(s, &Instance{ID: "load[d]", Stage: "load", Status: StatusDone}); err != nil {
		t.Fatal(err)
	}
	n, err := s.CountOutputs([]string{"load[d]"})
	if err != nil {
		t.Fatal(err)
	}
	var old int
	s.r.QueryRow(`SELECT COUNT(*) FROM items WHERE key LIKE 'old%'`).Scan(&old)
	if n != 500 || old != 0 {
		t.Errorf("after the rerun: %d records, %d of the killed run's left; want the 500 new ones alone", n, old)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".eaglet-sort-") {
			t.Errorf("a sort's temporary file stayed: %s", e.Name())
		}
	}
}

// TestBatchWriter_TransactionsOfSeveralStatements writes more records than
// one transaction takes (batchFlush), each transaction in statements of
// batchRows and a shorter last one, and reads back every record put, with
// its fields, in key order. The records' bytes are put from one buffer the
// caller reuses.
func TestBatchWriter_TransactionsOfSeveralStatements(t *testing.T) {
	s := openTemp(t)
	n := batchFlush + batchRows + 7
	bw, err := s.BeginBatch("load[d]")
	if err != nil {
		t.Fatal(err)
	}
	var data []byte
	for _, i := range rand.New(rand.NewPCG(5, 6)).Perm(n) {
		k := fmt.Sprintf("k%05d", i)
		data = fmt.Appendf(data[:0], `{"n":%d}`, i)
		if err := bw.Put(Item{Key: k, FP: "fp", OutHash: "h" + k, Chash: "c" + k, Data: data, PromptTokens: i}); err != nil {
			t.Fatal(err)
		}
	}
	if live, err := bw.Live(); err != nil || live != n {
		t.Fatalf("Live = %d, %v; want %d", live, err, n)
	}
	if err := bw.Commit(s, &Instance{ID: "load[d]", Stage: "load", Status: StatusDone}); err != nil {
		t.Fatal(err)
	}
	i := 0
	if err := s.EachOutputRef(context.Background(), []string{"load[d]"}, func(r Row) error {
		k := fmt.Sprintf("k%05d", i)
		if r.Key != k || r.Hash != "h"+k || r.Chash != "c"+k || r.PromptTokens != i {
			t.Fatalf("row %d: %+v", i, r)
		}
		i++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if i != n {
		t.Errorf("%d records read back; want %d", i, n)
	}
	i = 0
	if err := s.EachOutput(context.Background(), []string{"load[d]"}, func(r Row) error {
		if want := fmt.Sprintf(`{"n":%d}`, i); string(r.Data) != want {
			t.Fatalf("record %s holds %s; want %s", r.Key, r.Data, want)
		}
		i++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
