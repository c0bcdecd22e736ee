package state

import (
	"encoding/json"
	"reflect"
	"testing"
	"testing/synctest"
	"time"
)

func checkpoints(t *testing.T, s *Store, instance, prefix string) map[string]string {
	t.Helper()
	got := map[string]string{}
	var keys []string
	if err := s.Checkpoints(instance).EachCheckpoint(prefix, func(key string, value []byte) error {
		got[key] = string(value)
		keys = append(keys, key)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i := 1; i < len(keys); i++ {
		if keys[i-1] >= keys[i] {
			t.Errorf("keys out of order: %q", keys)
		}
	}
	return got
}

// TestStore_Checkpoints: a kind's checkpoints are kept per instance,
// replaced by key, listed by prefix in key order, written in batches by
// KeepLater, and forgotten by Reset of their instance only. KeepLater's
// timer runs on synctest's clock, so the test knows when it has fired.
func TestStore_Checkpoints(t *testing.T) {
	synctest.Test(t, testCheckpoints)
}

func testCheckpoints(t *testing.T) {
	s := openTemp(t)
	for _, c := range []struct{ inst, key, value string }{
		{"h", "launch/000000001/v1", `{"n":1}`},
		{"h", "launch/000000000/v1", `{"n":0}`},
		{"h", "launch/000000000/v1", `{"n":2}`}, // replaces
		{"h", "other/x", `{}`},
		{"g", "launch/000000000/v1", `{"g":true}`},
	} {
		if err := s.Checkpoints(c.inst).PutCheckpoint(c.key, []byte(c.value)); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"launch/000000000/v1": `{"n":2}`, "launch/000000001/v1": `{"n":1}`}
	if got := checkpoints(t, s, "h", "launch/"); !reflect.DeepEqual(got, want) {
		t.Errorf("h launch/: %v, want %v", got, want)
	}
	if got := checkpoints(t, s, "h", ""); len(got) != 3 {
		t.Errorf("h, every key: %v", got)
	}
	// KeepLater holds its writes for a moment, in order, then writes
	// them in one batch; Flush writes them at once.
	h := s.Checkpoints("h")
	h.KeepLater("later/a", []byte(`{"a":1}`))
	h.KeepLater("later/a", []byte(`{"a":2}`))
	h.KeepLater("later/b", []byte(`{}`))
	h.KeepLater("later/b", nil)
	h.KeepLater("other/x", nil)
	if got := checkpoints(t, s, "h", "later/"); len(got) != 0 {
		t.Errorf("KeepLater wrote at once: %v", got)
	}
	if err := h.Flush(); err != nil {
		t.Fatal(err)
	}
	if got := checkpoints(t, s, "h", ""); len(got) != 3 || got["later/a"] != `{"a":2}` || got["other/x"] != "" {
		t.Errorf("h after KeepLater and Flush: %v", got)
	}
	if got := checkpoints(t, s, "g", ""); len(got) != 1 {
		t.Errorf("forgetting h's other/x touched g: %v", got)
	}
	// Without Flush, the timer writes the batch once laterEvery is up.
	h.KeepLater("later/c", []byte(`{"c":1}`))
	time.Sleep(laterEvery - time.Millisecond)
	synctest.Wait()
	if got := checkpoints(t, s, "h", "later/c"); len(got) != 0 {
		t.Errorf("a held write was written before laterEvery: %v", got)
	}
	time.Sleep(time.Millisecond)
	synctest.Wait()
	if got := checkpoints(t, s, "h", "later/c"); got["later/c"] != `{"c":1}` {
		t.Errorf("a held write was not written once laterEvery was up: %v", got)
	}
	if err := s.Reset([]string{"h"}); err != nil {
		t.Fatal(err)
	}
	if got := checkpoints(t, s, "h", ""); len(got) != 0 {
		t.Errorf("h after Reset: %v", got)
	}
	if got := checkpoints(t, s, "g", ""); len(got) != 1 {
		t.Errorf("Reset of h forgot g's checkpoints: %v", got)
	}
}

// TestStore_Open_MovesLaunchesToCheckpoints opens a store of schema 9,
// whose launches had a table of their own, and finds each launch as a
// checkpoint under the key and with the fields internal/launch uses.
func TestStore_Open_MovesLaunchesToCheckpoints(t *testing.T) {
	s := openAtSchema(t, 9, `INSERT INTO launches (instance, shard, version, argv_hash, started_at, finished_at, exit_code, duration, log, outputs, error)
		VALUES ('h', 3, 'abc', 'hash', 1700000000000000000, 1700000090000000000, 0, 90.5, 'logs/3.log', '["o/1.pt","o/2.pt"]', ''),
		       ('h', 0, 'def', 'hash', 1700000000000000000, 0, -1, 0, 'logs/0.log', '[]', '')`)
	got := checkpoints(t, s, "h", "launch/")
	if len(got) != 2 {
		t.Fatalf("checkpoints after migration: %v", got)
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(got["launch/000000003/abc"]), &rec); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"shard": 3.0, "version": "abc", "argv_hash": "hash", "started_ns": 1.7e18, "finished_ns": 1.70000009e18,
		"exit_code": 0.0, "duration_s": 90.5, "log": "logs/3.log", "outputs": []any{"o/1.pt", "o/2.pt"}, "error": ""}
	if !reflect.DeepEqual(rec, want) {
		t.Errorf("migrated launch:\n got %v\nwant %v", rec, want)
	}
	if _, ok := got["launch/000000000/def"]; !ok {
		t.Errorf("shard 0's launch was not moved: %v", got)
	}
}
