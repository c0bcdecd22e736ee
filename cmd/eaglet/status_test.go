package main

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
)

// TestReasonList: an instance's reasons, most records first; reasons that
// differ only in numbers are one line with each differing number's range,
// and past ten lines the rest are summed in one.
func TestReasonList(t *testing.T) {
	many := map[string]int{}
	for i := range 14 {
		many[fmt.Sprintf("failed: reason %c", 'a'+i)] = 14 - i
	}
	for _, tc := range []struct {
		name   string
		prefix string
		in     map[string]int
		want   []string
	}{
		{"counts, then text", "", map[string]int{"dropped: over max_samples": 3, "failed: http 500": 3, "dropped: truncated": 9},
			[]string{"9 × dropped: truncated", "3 × dropped: over max_samples", "3 × failed: http 500"}},
		{"a server's message naming each prompt's length", "", map[string]int{
			"failed: prompt truncated by the server: it read 357 prompt tokens, raise the context to 4096":  2,
			"failed: prompt truncated by the server: it read 2213 prompt tokens, raise the context to 4096": 1,
			"failed: prompt truncated by the server: it read 157 prompt tokens, raise the context to 4096":  1,
			"failed: prompt truncated by the server: it read 400 prompt tokens, raise the context to 4096":  1,
			"failed: prompt truncated by the server: it read 401 prompt tokens, raise the context to 4096":  1,
			"failed: http 429":    1,
			"skipped: 0 of 5 fit": 1,
		}, []string{
			"6 × failed: prompt truncated by the server: it read 157-2213 prompt tokens, raise the context to 4096",
			"1 × failed: http 429",
			"1 × skipped: 0 of 5 fit",
		}},
		{"a few alike are different things", "", map[string]int{"failed: http 500": 3, "failed: http 503": 2, "failed: 3 retries": 1, "failed: 12 retries": 1},
			[]string{"3 × failed: http 500", "2 × failed: http 503", "1 × failed: 12 retries", "1 × failed: 3 retries"}},
		{"numbers in a word stay words", "flagged", map[string]int{"chat: contaminated (bench2.jsonl)": 2, "chat: contaminated (bench3.jsonl)": 1,
			"chat: contaminated (bench4.jsonl)": 1, "chat: contaminated (bench5.jsonl)": 1, "chat: contaminated (bench6.jsonl)": 1},
			[]string{"flagged: 2 × chat: contaminated (bench2.jsonl)", "flagged: 1 × chat: contaminated (bench3.jsonl)", "flagged: 1 × chat: contaminated (bench4.jsonl)",
				"flagged: 1 × chat: contaminated (bench5.jsonl)", "flagged: 1 × chat: contaminated (bench6.jsonl)"}},
		{"past ten lines, a sum", "", many, []string{
			"14 × failed: reason a", "13 × failed: reason b", "12 × failed: reason c", "11 × failed: reason d", "10 × failed: reason e",
			"9 × failed: reason f", "8 × failed: reason g", "7 × failed: reason h", "6 × failed: reason i", "5 × failed: reason j",
			"4 more reasons, 10 records (status --json lists each)",
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := reasonList(tc.prefix, tc.in); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestWithDiskHint: a run stopped by a full disk says what to do; any
// other failure is left as it is.
func TestWithDiskHint(t *testing.T) {
	err := errors.New("generate[d]: commit generate[d]: database or disk is full")
	full := []*engine.Result{{Outcome: engine.Ran}, {Outcome: engine.Errored, Err: fmt.Errorf("write: %w", syscall.ENOSPC)}}
	if got := withDiskHint(err, full, "/data/state.db").Error(); !strings.Contains(got, err.Error()+"\nthe disk is full: free space where the state store (/data/state.db)") {
		t.Errorf("full disk: %q; want the error, then what to do", got)
	}
	other := []*engine.Result{{Outcome: engine.Errored, Err: errors.New("http 500")}}
	if got := withDiskHint(err, other, "/data/state.db"); got != err {
		t.Errorf("other failure: %v; want it unchanged", got)
	}
}
