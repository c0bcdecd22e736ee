package dataset

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

// writeFile writes content to a temp file named name and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// readAll reads every record of path.
func readAll(t *testing.T, path string, opts Options) ([]*conv.Record, *Reader, error) {
	t.Helper()
	r, err := Open(path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var recs []*conv.Record
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return recs, r, nil
		}
		if err != nil {
			return recs, r, err
		}
		recs = append(recs, rec)
	}
}

func TestReader_MessagesAndShareGPT(t *testing.T) {
	tests := []struct {
		name, file, content, shape string
	}{
		{"messages jsonl", "a.jsonl", `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}` + "\n", "messages"},
		{"sharegpt array", "a.json", `[{"conversations":[{"from":"human","value":"hi"},{"from":"gpt","value":"yo"}]}]`, "sharegpt"},
		{"sharegpt pretty", "a.json", "[\n {\n  \"conversations\": [\n   {\"from\": \"human\", \"value\": \"hi\"},\n   {\"from\": \"gpt\", \"value\": \"yo\"}\n  ]\n }\n]\n", "sharegpt"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, tt.file, tt.content)
			recs, r, err := readAll(t, p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if r.Detected() != tt.shape {
				t.Errorf("Detected() = %q, want %q", r.Detected(), tt.shape)
			}
			if len(recs) != 1 {
				t.Fatalf("got %d records, want 1", len(recs))
			}
			want := []conv.Message{{Role: conv.User, Content: "hi"}, {Role: conv.Assistant, Content: "yo"}}
			got := recs[0]
			if len(got.Messages) != 2 || !reflect.DeepEqual(got.Messages[0], want[0]) || got.Messages[1].Content != "yo" {
				t.Errorf("messages = %+v", got.Messages)
			}
			if got.Key != conv.ContentKey(got.Messages, got.Tools) || got.Source.File != p || got.Source.Index != 0 {
				t.Errorf("key/source = %q %+v", got.Key, got.Source)
			}
		})
	}
}

func TestReader_BadRow(t *testing.T) {
	content := `{"messages":[{"role":"user","content":"hi"}]}
{"messages":[{"role":"user","content":"hi"
{"messages":[{"role":"assistant","content":"no prompt"}]}
{"messages":[{"role":"user","content":"ok"}]}
`
	p := writeFile(t, "bad.jsonl", content)
	_, _, err := readAll(t, p, Options{})
	var re *RowError
	if !errors.As(err, &re) || re.Line != 2 || re.Kind != "invalid JSON" {
		t.Fatalf("err = %v, want a RowError at line 2", err)
	}
	recs, r, err := readAll(t, p, Options{OnError: OnErrorSkip})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[1].Source.Line != 4 || recs[1].Source.Index != 3 {
		t.Errorf("got %d records, last source %+v", len(recs), recs[len(recs)-1].Source)
	}
	want := map[string]int{"invalid JSON": 1, "no user message": 1}
	for k, n := range want {
		if r.Skipped()[k] != n {
			t.Errorf("Skipped() = %v, want %v", r.Skipped(), want)
		}
	}
}
