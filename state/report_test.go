package state

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestStore_ReportQueries stores answers with finish reasons and timing and
// reads them back as the report does, through a read-only handle opened
// while the writer holds the store.
func TestStore_ReportQueries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "s.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Lock(); err != nil {
		t.Fatal(err)
	}
	const t0 = 1_700_000_000_000
	var items []Item
	for i := range 10 {
		finish := "stop"
		if i%5 == 0 {
			finish = "length"
		}
		url := "http://a"
		if i%2 == 1 {
			url = "http://b"
		}
		items = append(items, Item{Key: fmt.Sprintf("k%02d", i), Status: 0, Data: []byte(`{"key":"x"}`), PromptTokens: 10 + i%3,
			CompletionTokens: 100 * (i%3 + 1), Finish: finish, Sent: t0 + int64(i)*1000, FirstToken: t0 + int64(i)*1000 + 50,
			Finished: t0 + int64(i)*1000 + 1500, URL: url, InChash: fmt.Sprintf("c%02d", i)})
	}
	items = append(items, Item{Key: "k99", Status: 3, Reason: "http 500 (6 attempts): boom", InChash: "c99"})
	if err := s.Commit("g", items); err != nil {
		t.Fatal(err)
	}
	r, err := OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()

	compl, err := r.TokenCounts(ctx, "g", true)
	if err != nil {
		t.Fatal(err)
	}
	if want := []ValueCount{{100, 4, 1}, {200, 3, 0}, {300, 3, 1}}; !slices.Equal(compl, want) {
		t.Errorf("completion counts %v, want %v", compl, want)
	}
	prompt, err := r.TokenCounts(ctx, "g", false)
	if err != nil {
		t.Fatal(err)
	}
	if want := []ValueCount{{10, 4, 1}, {11, 3, 0}, {12, 3, 1}}; !slices.Equal(prompt, want) {
		t.Errorf("prompt counts %v, want %v", prompt, want)
	}
	fin, err := r.FinishCounts(ctx, "g")
	if err != nil || fin["stop"] != 8 || fin["length"] != 2 || len(fin) != 2 {
		t.Errorf("finish counts %v, %v", fin, err)
	}
	first, last, err := r.TimeSpan(ctx, []string{"g"})
	if err != nil || first != t0 || last != t0+9000+1500 {
		t.Errorf("time span %d..%d (%v), want %d..%d", first, last, err, t0, t0+10500)
	}
	// Bins of 5 s from t0+2s. Request i is sent at t0+i s to URL a (even)
	// or b (odd) and finishes 1.5 s later with 100*(i%3+1) tokens: 0 and 1
	// were sent before the window (bin -1), 0 also finished before it.
	bins, err := r.Timeline(ctx, []string{"g"}, t0+2000, 5000)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]TimeBin{}
	for _, b := range bins {
		k := fmt.Sprintf("%s %d", b.URL, b.Bin)
		x := got[k]
		x.Sent, x.Done, x.Tokens = x.Sent+b.Sent, x.Done+b.Done, x.Tokens+b.Tokens
		x.Streamed, x.FirstWait = x.Streamed+b.Streamed, x.FirstWait+b.FirstWait
		got[k] = x
	}
	want := map[string]TimeBin{
		"http://a -1": {Sent: 1, Done: 1, Tokens: 100}, "http://b -1": {Sent: 1},
		"http://a 0": {Sent: 3, Done: 2, Tokens: 500}, "http://b 0": {Sent: 2, Done: 3, Tokens: 600},
		"http://a 1": {Sent: 1, Done: 2, Tokens: 400}, "http://b 1": {Sent: 2, Done: 2, Tokens: 300},
	}
	for k, w := range want {
		if g := got[k]; g.Sent != w.Sent || g.Done != w.Done || g.Tokens != w.Tokens {
			t.Errorf("bin %s: sent %d done %d tokens %d, want %d %d %d", k, g.Sent, g.Done, g.Tokens, w.Sent, w.Done, w.Tokens)
		}
		// Every request showed its first token 50 ms after it was sent.
		if g := got[k]; g.Streamed != w.Sent || g.FirstWait != 50*int64(w.Sent) {
			t.Errorf("bin %s: %d first tokens after %d ms in all, want %d after %d", k, g.Streamed, g.FirstWait, w.Sent, 50*w.Sent)
		}
	}
	if len(got) != len(want) {
		t.Errorf("bins %v, want %v", got, want)
	}
	fails, err := r.Failures(ctx, []string{"g"}, t0, 1000)
	if err != nil || len(fails) != 1 || fails[0].N != 1 || !strings.HasPrefix(fails[0].Reason, "http 500") {
		t.Errorf("failures %v, %v", fails, err)
	}
	sample, err := r.Sample(ctx, "g", 3)
	if err != nil || len(sample) != 3 || sample[0].Key != "k00" || string(sample[0].Data) != `{"key":"x"}` {
		t.Errorf("sample %v, %v", sample, err)
	}
}

// TestStore_OpenReadOnly_Refuses says why a read-only open cannot read:
// no store, or one of an older schema, which it may not migrate.
func TestStore_OpenReadOnly_Refuses(t *testing.T) {
	dir := t.TempDir()
	if _, err := OpenReadOnly(filepath.Join(dir, "none.db")); err == nil || !strings.Contains(err.Error(), "run the spec first") {
		t.Errorf("missing store: %v", err)
	}
	old := storeAtSchema(t, 5, "")
	if _, err := OpenReadOnly(old); err == nil || !strings.Contains(err.Error(), "`eaglet status` on the spec upgrades it") {
		t.Errorf("schema 5 store: %v", err)
	}
}

// TestStore_Open_FillsFinishReasons: a schema-5 store's answers get their
// finish reasons from their records when it is upgraded, so the report of
// an earlier run still shows them.
func TestStore_Open_FillsFinishReasons(t *testing.T) {
	s := openAtSchema(t, 5, `INSERT INTO items (instance, key, status, data, ctok, in_chash) VALUES
		('g', 'k1', 0, CAST('{"key":"k1","generation":{"content":"x","finish_reason":"length"}}' AS BLOB), 7, 'c1'),
		('g', 'k2', 0, CAST('{"key":"k2","generation":{"content":"y","finish_reason":"stop"}}' AS BLOB), 3, 'c2'),
		('g', 'k3', 0, CAST('not json' AS BLOB), 3, 'c3'),
		('load[d]', 'k1', 0, CAST('{"key":"k1"}' AS BLOB), 0, '')`)
	fin, err := s.FinishCounts(context.Background(), "g")
	if err != nil || fin["length"] != 1 || fin["stop"] != 1 || fin[""] != 1 {
		t.Errorf("finish reasons after the upgrade: %v, %v", fin, err)
	}
}
