package dataset

import (
	"bytes"
	"compress/gzip"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

// TestReader_BadInputPolicy is the README's bad-input table, entry by
// entry: what eaglet does with each kind of odd input, under on_error fail
// (the default) and skip. Nothing is silently changed or silently empty.
func TestReader_BadInputPolicy(t *testing.T) {
	const row = `{"prompt":"hi"}`
	tests := []struct {
		name, file, content string
		// For on_error fail: the records read before the error (or all of
		// them), and the error ("" for none).
		records int
		err     string
		// For on_error skip: the records read and the rows skipped, by kind.
		skipRecords int
		skipped     map[string]int
	}{
		{name: "empty file", file: "a.jsonl", content: "",
			err: "no rows: the file is empty (0 bytes)"},
		{name: "blank lines", file: "a.jsonl", content: "\n  \n\t\n",
			err: "no rows: it holds only blank lines (3)"},
		{name: "empty array", file: "a.json", content: "[ ]",
			err: "no rows: it holds only empty JSON arrays"},
		{name: "blank lines between rows", file: "a.jsonl", content: "\n" + row + "\n\n\n" + `{"prompt":"yo"}` + "\n\n",
			records: 2, skipRecords: 2},
		{name: "byte order mark", file: "a.jsonl", content: "\ufeff" + row + "\n",
			records: 1, skipRecords: 1},
		{name: "CRLF line ends", file: "a.jsonl", content: row + "\r\n" + `{"prompt":"yo"}` + "\r\n",
			records: 2, skipRecords: 2},
		{name: "invalid UTF-8", file: "a.jsonl", content: row + "\n" + "{\"prompt\":\"caf\xff\xfe\"}\n",
			records: 1, err: "a.jsonl:2: invalid UTF-8 at byte 15 of the row (ff fe 22 7d); re-encode the file as UTF-8",
			skipRecords: 1, skipped: map[string]int{"invalid UTF-8": 1}},
		{name: "lone surrogate escape", file: "a.jsonl", content: `{"prompt":"x\ud800y"}` + "\n" + row + "\n",
			err:         `a.jsonl:1: \ud800 at byte 13 of the row is half of a UTF-16 surrogate pair`,
			skipRecords: 1, skipped: map[string]int{"invalid UTF-8": 1}},
		{name: "surrogate pair and escaped backslash", file: "a.jsonl", content: `{"prompt":"\ud83d\ude00 \\ud800"}` + "\n",
			records: 1, skipRecords: 1},
		{name: "NUL byte", file: "a.jsonl", content: row + "\n{\"prompt\":\"a\x00b\"}\n",
			records: 1, err: "a.jsonl:2:13: row is not valid JSON (invalid character '\\x00' in string)",
			skipRecords: 1, skipped: map[string]int{"invalid JSON": 1}},
		{name: "escaped NUL is text", file: "a.jsonl", content: `{"prompt":"a\u0000b"}` + "\n",
			records: 1, skipRecords: 1},
		{name: "truncated tail", file: "a.jsonl", content: row + "\n" + `{"prompt":"h`,
			records: 1, err: "a.jsonl:2:12: row is not valid JSON (unexpected end of JSON input)",
			skipRecords: 1, skipped: map[string]int{"invalid JSON": 1}},
		{name: "a key without a value, the row indented", file: "a.jsonl", content: row + "\n   " + `{"broken": "id": 1}` + "\n",
			records: 1, err: "a.jsonl:2:19: row is not valid JSON (invalid character ':' after object key:value pair)",
			skipRecords: 1, skipped: map[string]int{"invalid JSON": 1}},
		{name: "a trailing comma on the first line", file: "a.jsonl", content: "  " + `{"a": 1,}` + "\n" + row + "\n",
			err:         "a.jsonl:1:11: row is not valid JSON (invalid character '}' looking for beginning of object key string)",
			skipRecords: 1, skipped: map[string]int{"invalid JSON": 1}},
		{name: "duplicates are read; load stores them once", file: "a.jsonl", content: row + "\n" + row + "\n",
			records: 2, skipRecords: 2},
		{name: "truncated gzip", file: "a.jsonl.gz", content: truncatedGzip(),
			err: "a.jsonl.gz: the compressed data ends in the middle of line 1 (unexpected EOF): the file is truncated"},
		{name: "UTF-16", file: "a.jsonl", content: "\xff\xfe{\x00\"\x00", err: "the file is UTF-16 (byte order mark ff fe); convert it to UTF-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, tt.file, tt.content)
			var recs []*conv.Record
			r, err := Open(p, Options{})
			if err == nil {
				r.Close()
				recs, _, err = readAll(t, p, Options{})
			}
			switch {
			case tt.err == "" && err != nil:
				t.Errorf("on_error fail: %v; want no error", err)
			case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
				t.Errorf("on_error fail: err = %v; want one containing %q", err, tt.err)
			}
			if len(recs) != tt.records {
				t.Errorf("on_error fail: %d records; want %d", len(recs), tt.records)
			}
			if strings.HasPrefix(tt.err, "no rows") && !errors.Is(err, ErrNoRows) {
				t.Errorf("err = %v; want ErrNoRows", err)
			}
			if tt.skipped == nil && tt.err != "" && tt.records == 0 && tt.skipRecords == 0 {
				return // an error for the whole file, the same either way
			}
			recs, r, err = readAll(t, p, Options{OnError: OnErrorSkip})
			if err != nil {
				t.Fatalf("on_error skip: %v", err)
			}
			if len(recs) != tt.skipRecords {
				t.Errorf("on_error skip: %d records; want %d", len(recs), tt.skipRecords)
			}
			if got := r.Skipped(); len(got) != len(tt.skipped) || (len(got) > 0 && got[firstKey(tt.skipped)] != tt.skipped[firstKey(tt.skipped)]) {
				t.Errorf("on_error skip: skipped %v; want %v", got, tt.skipped)
			}
		})
	}
}

func firstKey(m map[string]int) string {
	for k := range m {
		return k
	}
	return ""
}

// truncatedGzip is a gzip stream of two rows cut in half (a deflate block
// that is cut yields nothing, so the cut is found at line 1).
func truncatedGzip() string {
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	zw.Write([]byte(`{"prompt":"one"}` + "\n" + `{"prompt":"` + strings.Repeat("long ", 2000) + `"}` + "\n"))
	zw.Close()
	return b.String()[:b.Len()/2]
}

// TestReader_ParquetInvalidUTF8: a Parquet string that is not UTF-8 is a
// bad row too; json.Marshal would otherwise replace its bytes unseen.
func TestReader_ParquetInvalidUTF8(t *testing.T) {
	p := filepath.Join(t.TempDir(), "train.parquet")
	writeParquet(t, p, []pqRow{
		{ID: "a", Messages: []pqMessage{{"user", "fine"}, {"assistant", "ok"}}},
		{ID: "b", Messages: []pqMessage{{"user", "caf\xe9"}, {"assistant", "ok"}}},
	})
	recs, _, err := readAll(t, p, Options{})
	if len(recs) != 1 || err == nil || !strings.Contains(err.Error(), "row 1: a string of the row is not UTF-8") {
		t.Errorf("%d records, err %v; want the first, then row 1 refused as not UTF-8", len(recs), err)
	}
	recs, r, err := readAll(t, p, Options{OnError: OnErrorSkip})
	if err != nil || len(recs) != 1 || r.Skipped()["invalid UTF-8"] != 1 {
		t.Errorf("skip: %d records, skipped %v, err %v; want 1 record and 1 invalid UTF-8 skipped", len(recs), r.Skipped(), err)
	}
}
