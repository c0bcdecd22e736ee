package dataset

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEncode_RoundTrip writes every record of every sample dataset back as
// messages and as ShareGPT, reads it again, and wants the same record.
func TestEncode_RoundTrip(t *testing.T) {
	files, _ := filepath.Glob("testdata/*/*")
	for _, format := range []string{"messages", "sharegpt"} {
		t.Run(format, func(t *testing.T) {
			var want, wantMsgs []string
			var rows []string
			skipped := 0
			for _, f := range files {
				if filepath.Base(f) == "SOURCE.md" || strings.HasSuffix(f, ".golden") || strings.HasPrefix(f, "testdata/fuzz/") {
					continue
				}
				recs, _, _ := readAll(t, f, Options{OnError: OnErrorSkip})
				for _, rec := range recs {
					b, err := Encode(rec, format)
					if errors.Is(err, ErrNotRepresentable) {
						skipped++
						continue
					}
					if err != nil {
						t.Fatal(err)
					}
					rows = append(rows, string(b))
					want = append(want, rec.Key)
					m, _ := json.Marshal(rec.Messages)
					wantMsgs = append(wantMsgs, string(m))
				}
			}
			p := filepath.Join(t.TempDir(), "rt.jsonl")
			if err := os.WriteFile(p, []byte(strings.Join(rows, "\n")), 0o644); err != nil {
				t.Fatal(err)
			}
			recs, r, err := readAll(t, p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Detected() != format || len(recs) != len(want) {
				t.Fatalf("read back %d records as %q, want %d as %q", len(recs), r.Detected(), len(want), format)
			}
			for i, rec := range recs {
				// The messages format also keeps how content and arguments
				// were spelt (null, parts, argument text).
				m, _ := json.Marshal(rec.Messages)
				if rec.Key != want[i] || format == "messages" && string(m) != wantMsgs[i] {

					b, _ := json.Marshal(rec.Messages)
					t.Fatalf("record %d changed in the round trip:\nrow  %.2000s\nread %.2000s", i, rows[i], b)
				}
			}
			t.Logf("%s: %d records round-tripped, %d not representable", format, len(recs), skipped)
		})
	}
}
