package state

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestStore_Open_NewerSchema(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.w.Exec(`PRAGMA user_version = 99`); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := Open(path); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("Open of a newer schema: %v; want ErrNewerSchema", err)
	}
}

// TestStore_Open_MigratesEarlierSchema opens a store written by an earlier
// binary (schema 3, the clustered items table) and finds its records.
func TestStore_Open_MigratesEarlierSchema(t *testing.T) {
	s := openAtSchema(t, 3, `INSERT INTO items (instance, key, status, data, ctok, ord)
		VALUES ('load[d]', 'k1', 0, '{"a":1}', 7, 0), ('merge', 'k2', 0, '{}', 0, 5)`)
	var got []string
	if err := s.EachOutput(context.Background(), []string{"load[d]"}, func(r Row) error {
		got = append(got, r.Key+" "+string(r.Data))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0] != `k1 {"a":1}` {
		t.Errorf("records after migration: %q", got)
	}
	if lengths, err := s.CompletionLengths("load[d]", 10); err != nil || len(lengths) != 1 || lengths[0] != 7 {
		t.Errorf("completion lengths after migration: %v, %v", lengths, err)
	}
	var ordered []string
	if err := s.EachOrdered(context.Background(), "merge", func(r Row) error {
		ordered = append(ordered, r.Key)
		return nil
	}); err != nil || len(ordered) != 1 {
		t.Errorf("ordered records after migration: %v, %v", ordered, err)
	}
}

// openAtSchema writes a store as a binary of schema version did, runs
// setup (SQL of that schema) on it, and opens it with this binary.
// openTemp opens a new store in a test's temporary directory, closed when
// the test ends.
func openTemp(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "s.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openAtSchema(t *testing.T, version int, setup string) *Store {
	t.Helper()
	s, err := Open(storeAtSchema(t, version, setup))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// storeAtSchema writes a store as an eaglet of schema version left it,
// holding what the SQL of setup puts in it, and returns its path.
func storeAtSchema(t *testing.T, version int, setup string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range migrations[:version] {
		if _, err := db.Exec(m); err != nil {
			t.Fatalf("migration %d: %v", i, err)
		}
	}
	if _, err := db.Exec(fmt.Sprintf("PRAGMA user_version = %d;\n%s", version, setup)); err != nil {
		t.Fatal(err)
	}
	db.Close()
	return path
}

func TestStore_Lock_NamesHolder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	a, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	if err := a.Lock(); err != nil {
		t.Fatal(err)
	}
	b, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	var le *LockedError
	if err := b.Lock(); !errors.As(err, &le) || le.PID != os.Getpid() {
		t.Fatalf("second Lock: %v; want a LockedError naming pid %d", err, os.Getpid())
	}
	a.Close()
	if err := b.Lock(); err != nil {
		t.Fatalf("Lock after the holder closed: %v", err)
	}
}

func TestStore_PendingAndReconcile(t *testing.T) {
	s := openTemp(t)
	up := []Item{{Key: "a", OutHash: "ha", Data: []byte(`{}`)}, {Key: "b", OutHash: "hb", Data: []byte(`{}`)}}
	if err := s.Commit("up", up); err != nil {
		t.Fatal(err)
	}
	p, _ := s.CountPending("down", []string{"up"}, "fp1")
	if n := p.Records; n != 2 {
		t.Fatalf("pending before any work = %d; want 2", n)
	}
	if err := s.Commit("down", []Item{{Key: "a", FP: "fp1", InHash: "ha", OutHash: "x", Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if p, _ := s.CountPending("down", []string{"up"}, "fp1"); p.Records != 1 {
		t.Errorf("pending after one outcome = %d; want 1", p.Records)
	}
	if p, _ := s.CountPending("down", []string{"up"}, "fp2"); p.Records != 2 {
		t.Errorf("pending under a new fingerprint = %d; want 2", p.Records)
	}
	// Input "a" leaves: its outcome is set aside, then comes back to life.
	if err := s.Commit("up", []Item{{Key: "a", Status: 1}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Reconcile("down", []string{"up"}, "fp1"); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.CountOutputs([]string{"down"}); c != 0 {
		t.Errorf("live outputs after the input left = %d; want 0", c)
	}
	if err := s.Commit("up", up[:1]); err != nil {
		t.Fatal(err)
	}
	if err := s.Reconcile("down", []string{"up"}, "fp1"); err != nil {
		t.Fatal(err)
	}
	if c, _ := s.CountOutputs([]string{"down"}); c != 1 {
		t.Errorf("live outputs after the input came back = %d; want 1", c)
	}
}

func TestStore_Snapshot(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(filepath.Join(dir, "state.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Commit("up", []Item{{Key: "a", OutHash: "ha", Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	copyPath := filepath.Join(dir, "copy.db")
	if err := s.Snapshot(copyPath); err != nil {
		t.Fatal(err)
	}
	c, err := Open(copyPath)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// Writes to the copy leave the store as it was.
	if err := c.Commit("up", []Item{{Key: "b", OutHash: "hb", Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	if n, _ := c.CountOutputs([]string{"up"}); n != 2 {
		t.Errorf("copy holds %d records; want 2", n)
	}
	if n, _ := s.CountOutputs([]string{"up"}); n != 1 {
		t.Errorf("store holds %d records after writes to its copy; want 1", n)
	}
}

// TestStore_Open_PathWithURICharacters: a '#' or '?' in a directory name
// is part of the path, not the start of a URI fragment or query.
func TestStore_Open_PathWithURICharacters(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run#1?x=%41")
	path := filepath.Join(dir, "state.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Commit("up", []Item{{Key: "a", OutHash: "ha", Data: []byte(`{}`)}}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if _, err := os.Stat(path); err != nil {
		t.Errorf("the store is not where it was asked to be: %v", err)
	}
}

// TestStore_QueriesUseIndexes: the per-record queries of reuse search an
// index for the rows they need. A first version scanned every record at
// each look-up, and walked the whole instance at each commit
// ("(instance=?)" alone), so a large run slowed down commit by commit.
func TestStore_QueriesUseIndexes(t *testing.T) {
	s := openTemp(t)
	tests := []struct {
		name, query string
		args        []any
		want        string
	}{
		{"look an answer up by content", reusableSQL, []any{"c", "fp", "c", "fp"}, "USING INDEX items_reuse"},
		{"look answers up by content, a page at once", reusableAmongSQL(2), []any{"c", "d", "fp", "c", "d", "fp"}, "USING INDEX items_reuse"},
		{"keep superseded answers", supersededSQL(2), []any{"inst", "a", "b", "fp", "x", "y"}, "(instance=? AND key=?)"},
		{"find the rows a commit replaces", heldSQL(2), []any{"inst", "a", "b"}, "(instance=? AND key=?)"},
		{"report: lengths", tokenCountsSQL("ctok"), []any{"g"}, "USING COVERING INDEX items_answers"},
		{"report: prompt lengths", tokenCountsSQL("ptok"), []any{"g"}, "USING COVERING INDEX items_answers"},
		{"report: finish reasons", finishSQL, []any{"g"}, "USING COVERING INDEX items_answers"},
		{"report: answers", answersDoneSQL, []any{"g"}, "USING COVERING INDEX items_answers"},
		{"report: time span", timeSpanSQL(2), []any{"a", "b"}, "USING COVERING INDEX items_answers"},
		{"report: timeline", timelineSQL(2), []any{1, 1, 1, 1, 1, 1, "a", "b"}, "USING COVERING INDEX items_answers"},
	}
	for _, tt := range tests {
		rows, err := s.r.Query(`EXPLAIN QUERY PLAN `+tt.query, tt.args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notUsed int
			var detail string
			if err := rows.Scan(&id, &parent, &notUsed, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if got := strings.Join(plan, "\n"); !strings.Contains(got, tt.want) || strings.Contains(got, "SCAN items") {
			t.Errorf("%s: the query plan lacks %q:\n%s", tt.name, tt.want, got)
		}
	}
}

// TestStore_Open_FillsDatasets opens a schema-6 store whose instance over
// every dataset holds a record of its own and a reference, and reads each
// dataset's part of it.
func TestStore_Open_FillsDatasets(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range migrations[:6] {
		if _, err := db.Exec(m); err != nil {
			t.Fatalf("migration %d: %v", i, err)
		}
	}
	if _, err := db.Exec(`PRAGMA user_version = 6;
		INSERT INTO instances (id, stage, dataset) VALUES ('load[a]', 'load', 'a'), ('load[b]', 'load', 'b'), ('all', 'cap', '');
		INSERT INTO items (instance, key, status, data) VALUES ('load[a]', 'k1', 0, '{"dataset":"a"}'),
			('load[b]', 'k2', 0, '{"dataset":"b"}'), ('all', 'k3', 0, '{"dataset":"b"}');
		INSERT INTO items (instance, key, status, origin) VALUES ('all', 'k1', 0, 'load[a]'), ('all', 'k2', 0, 'load[b]')`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for ds, want := range map[string]string{"a": "k1", "b": "k2 k3", "c": ""} {
		var got []string
		if err := s.EachOutput(context.Background(), []string{Part("all", ds)}, func(r Row) error {
			got = append(got, r.Key)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if strings.Join(got, " ") != want {
			t.Errorf("dataset %s of all: %q, want %q", ds, got, want)
		}
	}
}

// TestEachOutputRef_AsEachOutput visits the records EachOutput visits, in
// its order, a key that two instances hold once, and leaves out what is
// not live and done; it says what the rows say without the records.
func TestEachOutputRef_AsEachOutput(t *testing.T) {
	s := openTemp(t)
	var a, b []Item
	for i := range pageSize*10 + 7 { // over a page of keys
		a = append(a, Item{Key: fmt.Sprintf("k%06d", 2*i), OutHash: "h", Data: []byte(`{}`), PromptTokens: i})
		b = append(b, Item{Key: fmt.Sprintf("k%06d", 3*i), Data: []byte(`{}`), Status: i % 5 / 4, Dataset: "db"})
	}
	if err := s.Commit("load[a]", a); err != nil {
		t.Fatal(err)
	}
	if err := s.Commit("load[b]", b); err != nil {
		t.Fatal(err)
	}
	if err := s.PutInstance(&Instance{ID: "load[a]", Stage: "load", Dataset: "da"}); err != nil {
		t.Fatal(err)
	}
	ids := []string{"load[a]", "load[b]"}
	var want, got []string
	if err := s.EachOutput(context.Background(), ids, func(r Row) error {
		want = append(want, r.Key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.EachOutputRef(context.Background(), ids, func(r Row) error {
		got = append(got, r.Key)
		var n int
		fmt.Sscanf(r.Key, "k%d", &n)
		inA := n%2 == 0 && n/2 < len(a) // load[a] is first by name
		switch {
		case r.Data != nil:
			t.Fatalf("%s: data read", r.Key)
		case inA && (r.Origin != "load[a]" || r.Dataset != "da" || r.Hash != "h" || r.PromptTokens != n/2):
			t.Fatalf("%s: %+v; want load[a]'s row, its instance's dataset", r.Key, r)
		case !inA && (r.Origin != "load[b]" || r.Dataset != "db"):
			t.Fatalf("%s: %+v; want load[b]'s row, its own dataset", r.Key, r)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(want) < len(a) || strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("EachOutputRef visited %d keys, EachOutput %d (of %d and %d put)", len(got), len(want), len(a), len(b))
	}
}

// TestStore_ReusableAmong finds, for a page of contents, those whose answer
// ReusableOutcome would return: done answers with data under the
// fingerprint, in any instance or in the cache of superseded answers.
func TestStore_ReusableAmong(t *testing.T) {
	s := openTemp(t)
	ctx := context.Background()
	answer := []byte(`{"generation":{"content":"hi"}}`)
	if err := s.Commit("g[a]", []Item{
		{Key: "k1", FP: "fp", InChash: "done", Data: answer},
		{Key: "k2", FP: "fp", InChash: "failed", Status: 2, Reason: "http 500"},
		{Key: "k3", FP: "other", InChash: "elsewhere", Data: answer},
		{Key: "k4", FP: "old", InChash: "superseded", Data: answer},
	}); err != nil {
		t.Fatal(err)
	}
	// k4 answered again under fp: its old answer moves to the cache.
	if err := s.Commit("g[a]", []Item{{Key: "k4", FP: "fp", InChash: "superseded2", Data: answer}}); err != nil {
		t.Fatal(err)
	}
	many := []string{"done", "failed", "elsewhere", "superseded", "absent"}
	for range amongRows {
		many = append(many, "filler") // more than one query's worth
	}
	many = append(many, "superseded2")
	for _, tt := range []struct {
		fp   string
		want []string
	}{
		{"fp", []string{"done", "superseded2"}},
		{"old", []string{"superseded"}},
		{"other", []string{"elsewhere"}},
		{"", nil},
	} {
		found, err := s.ReusableAmong(ctx, tt.fp, many)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for c := range found {
			got = append(got, c)
		}
		slices.Sort(got)
		if !slices.Equal(got, tt.want) {
			t.Errorf("fp %q: found %q; want %q", tt.fp, got, tt.want)
		}
		for _, c := range many {
			r, err := s.ReusableOutcome(ctx, tt.fp, c)
			if err != nil {
				t.Fatal(err)
			}
			if (r != nil) != found[c] {
				t.Errorf("fp %q, %s: ReusableOutcome found %v, ReusableAmong %v", tt.fp, c, r != nil, found[c])
			}
		}
	}
}

// TestStore_Open_PageSize: a store Open creates has newPageSize pages in
// WAL mode; one an earlier binary made with 4 KiB pages keeps them and
// stays readable and writable. Both checkpoint after the same bytes of WAL.
func TestStore_Open_PageSize(t *testing.T) {
	for _, tc := range []struct {
		name string
		path func(t *testing.T) string
		want int
	}{
		{"new", func(t *testing.T) string { return filepath.Join(t.TempDir(), "s.db") }, newPageSize},
		{"earlier binary", func(t *testing.T) string {
			return storeAtSchema(t, SchemaVersion, `INSERT INTO items (instance, key, status, out_hash, data)
				VALUES ('up', 'a', 0, 'ha', '{}')`)
		}, 4096},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := Open(tc.path(t))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var page, autocheckpoint int
			var mode string
			if err := s.r.QueryRow(`PRAGMA page_size`).Scan(&page); err != nil {
				t.Fatal(err)
			}
			if err := s.w.QueryRow(`PRAGMA journal_mode`).Scan(&mode); err != nil {
				t.Fatal(err)
			}
			if err := s.w.QueryRow(`PRAGMA wal_autocheckpoint`).Scan(&autocheckpoint); err != nil {
				t.Fatal(err)
			}
			if page != tc.want || mode != "wal" || autocheckpoint*page != walCheckpointBytes {
				t.Errorf("page size %d, journal %s, checkpoint every %d pages; want %d, wal, %d bytes",
					page, mode, autocheckpoint, tc.want, walCheckpointBytes)
			}
			if err := s.Commit("up", []Item{{Key: "b", OutHash: "hb", Data: []byte(`{}`)}}); err != nil {
				t.Fatal(err)
			}
			if n, err := s.CountOutputs([]string{"up"}); err != nil || n < 1 {
				t.Errorf("records after a commit: %d, %v", n, err)
			}
		})
	}
}
