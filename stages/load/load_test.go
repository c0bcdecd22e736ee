package load_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/engine/enginetest"
	"github.com/eaglet-dev/eaglet/internal/conv"
	_ "github.com/eaglet-dev/eaglet/stages/all"
	"github.com/eaglet-dev/eaglet/state"
)

const rows = `{"messages":[{"role":"user","content":"one"}]}
{"messages":[{"role":"user","content":"two"}]}
{"messages":[{"role":"user","content":"one"}]}
{"messages": not json}
`

func run(t *testing.T, rows, onError string) (*state.Store, error) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "d.jsonl"), []byte(rows), 0o644)
	spec := "version: 1\nname: l\nstate: s.db\ndatasets: {d: {source: d.jsonl, on_error: " + onError + "}}\nstages: [{name: load, uses: load, foreach: datasets}]\n"
	p, store := enginetest.Open(t, dir, spec)
	_, err := p.Run(context.Background(), store, engine.RunOptions{Log: &bytes.Buffer{}})
	return store, err
}

func TestLoad_BadRowsAndDuplicates(t *testing.T) {
	if _, err := run(t, rows, "fail"); err == nil || !strings.Contains(err.Error(), "d.jsonl:4") || !strings.Contains(err.Error(), "on_error: skip") {
		t.Errorf("a bad row with on_error fail: %v; want an error naming d.jsonl:4 and the skip option", err)
	}
	// Load names the skip option once, for its dataset, whatever the reason.
	if _, err := run(t, `{"messages":[{"role":"user","content":""}]}`+"\n", "fail"); err == nil || strings.Count(err.Error(), "on_error") != 1 {
		t.Errorf("an empty turn with on_error fail: %v; want the skip option named once", err)
	}
	store, err := run(t, rows, "skip")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := store.CountOutputs([]string{"load[d]"})
	in, _ := store.GetInstance("load[d]")
	if n != 2 || in.Stats.Dropped["duplicate"] != 1 || len(in.Stats.Skipped) != 1 {
		t.Errorf("loaded %d records, stats %+v; want 2 records, 1 duplicate, 1 bad row counted", n, in.Stats)
	}
	// The first occurrence of a duplicate is the one kept.
	store.EachOutput(context.Background(), []string{"load[d]"}, func(row state.Row) error {
		var rec conv.Record
		json.Unmarshal(row.Data, &rec)
		if rec.Messages[0].Content == "one" && rec.Source.Line != 1 {
			t.Errorf("the duplicate kept is from line %d; want the first, line 1", rec.Source.Line)
		}
		return nil
	})
}

// TestLoad_NothingToLoad: a dataset that yields no records is an error
// whatever on_error says, never an empty success.
func TestLoad_NothingToLoad(t *testing.T) {
	tests := []struct {
		name, rows, onError, want string
	}{
		{"empty file", "", "fail", "no rows: the file is empty"},
		{"empty file, skip", "", "skip", "no rows: the file is empty"},
		{"blank lines", "\n\n \n", "fail", "no rows: it holds only blank lines (3)"},
		{"every row bad", "{\"messages\": not json}\n\xff\n", "skip", "every row of "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := run(t, tt.rows, tt.onError)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v; want one containing %q", err, tt.want)
			}
		})
	}
}
