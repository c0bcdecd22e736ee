package dataset

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// fullRecords is how many records per file the golden output shows in full;
// the rest appear as one summary line each, whose content key still
// changes with any change in normalization.
const fullRecords = 3

// TestGolden loads every sample dataset in testdata and compares what
// eaglet makes of it with FILE.golden beside it.
func TestGolden(t *testing.T) {
	files, err := filepath.Glob("testdata/*/*")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, f := range files {
		base := filepath.Base(f)
		if base == "SOURCE.md" || strings.HasSuffix(base, ".golden") || strings.HasPrefix(f, "testdata/fuzz/") {
			continue
		}
		n++
		t.Run(filepath.Base(filepath.Dir(f))+"/"+base, func(t *testing.T) {
			got := goldenOutput(t, f)
			golden := f + ".golden"
			if *update {
				if err := os.WriteFile(golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("normalized output of %s changed; diff against %s, and if the change is intended run go test -update\n%s", f, golden, firstDiff(got, want))
			}
		})
	}
	if n < 27 {
		t.Errorf("found %d sample files in testdata, want at least 27", n)
	}
}

// goldenOutput reads path twice, failing on the first bad row and then
// skipping bad rows, and prints what it found.
func goldenOutput(t *testing.T, path string) []byte {
	var out bytes.Buffer
	for _, policy := range []string{OnErrorFail, OnErrorSkip} {
		recs, r, err := readAll(t, path, Options{OnError: policy})
		fmt.Fprintf(&out, "# on_error: %s  container: %s  shape: %s  records: %d\n", policy, r.Container(), r.Detected(), len(recs))
		if err != nil {
			var re *RowError
			if !errors.As(err, &re) {
				t.Fatalf("error is not a *RowError: %v", err)
			}
			fmt.Fprintf(&out, "# error: %s\n", strings.TrimPrefix(err.Error(), "testdata/"))
		}
		if policy == OnErrorFail {
			for i, rec := range recs {
				if i < fullRecords {
					rec.Source.File = filepath.Base(rec.Source.File)
					b, _ := json.MarshalIndent(rec, "", " ")
					out.Write(b)
					out.WriteByte('\n')
					continue
				}
				roles := make([]string, len(rec.Messages))
				for j, m := range rec.Messages {
					roles[j] = m.Role[:1]
					if len(m.ToolCalls) > 0 {
						roles[j] += fmt.Sprintf("(%d calls)", len(m.ToolCalls))
					}
				}
				fmt.Fprintf(&out, "%s line=%d index=%d tools=%d %s\n", rec.Key, rec.Source.Line, rec.Source.Index, len(rec.Tools), strings.Join(roles, ","))
			}
			continue
		}
		skipped := r.Skipped()
		kinds := make([]string, 0, len(skipped))
		for k := range skipped {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		for _, k := range kinds {
			fmt.Fprintf(&out, "# skipped %s: %d\n", k, skipped[k])
		}
	}
	return out.Bytes()
}

// firstDiff shows the first differing line of two outputs.
func firstDiff(got, want []byte) string {
	g, w := strings.Split(string(got), "\n"), strings.Split(string(want), "\n")
	for i := 0; i < len(g) || i < len(w); i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			return fmt.Sprintf("line %d:\n got: %.300s\nwant: %.300s", i+1, gl, wl)
		}
	}
	return ""
}
