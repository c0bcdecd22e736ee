package dataset

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// pqMessage and pqRow are the Hugging Face layout of a chat dataset:
// a list of {role, content} structs per row.
type pqMessage struct {
	Role    string `parquet:"role"`
	Content string `parquet:"content"`
}

type pqRow struct {
	ID       string      `parquet:"id"`
	Messages []pqMessage `parquet:"messages,list"`
}

func writeParquet(t testing.TB, path string, rows []pqRow) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[pqRow](f, parquet.Compression(&parquet.Zstd))
	if _, err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestReader_Parquet(t *testing.T) {
	p := filepath.Join(t.TempDir(), "train-00000.parquet")
	var rows []pqRow
	for i := range 100 {
		rows = append(rows, pqRow{ID: "r", Messages: []pqMessage{{"user", "q"}, {"assistant", string(rune('a' + i%26))}}})
	}
	rows[7].Messages[0].Content = ""
	writeParquet(t, p, rows)
	n, err := Count(p, Options{})
	if err != nil || n != 100 {
		t.Fatalf("Count = %d, %v; want 100", n, err)
	}
	recs, r, err := readAll(t, p, Options{OnError: OnErrorSkip})
	if err != nil {
		t.Fatal(err)
	}
	if r.Container() != "parquet" || r.Detected() != "messages" || len(recs) != 99 {
		t.Fatalf("container %q shape %q records %d", r.Container(), r.Detected(), len(recs))
	}
	if got := recs[7].Source.Index; got != 8 {
		t.Errorf("Index after a skipped row = %d, want 8", got)
	}
	if recs[1].Messages[1].Content != "b" || recs[1].Source.Line != 0 {
		t.Errorf("record 1 = %+v", recs[1])
	}
	_, _, err = readAll(t, p, Options{})
	if err == nil || err.Error() != p+": row 7: messages: message 0 (user) is empty" {
		t.Errorf("err = %v", err)
	}
}
