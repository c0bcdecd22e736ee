package dataset

import (
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/parquet-go/parquet-go"
)

// parquetSource reads the rows of a Parquet file (the Hugging Face hub's
// storage format) as JSON objects, a batch of row groups' rows at a time,
// through parquet-go: the format's encodings, compression codecs and
// nested lists are too much to hand-write well.
type parquetSource struct {
	f    *os.File
	pf   *parquet.File
	r    *parquet.GenericReader[map[string]any]
	buf  []map[string]any
	pos  int
	n    int
	done bool
}

// parquetBatch is how many rows are decoded at once: enough to amortize
// the reader's per-call cost, few enough to keep memory flat.
const parquetBatch = 64

func openParquet(f *os.File) (source, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	pf, err := parquet.OpenFile(f, st.Size())
	if err != nil {
		return nil, fmt.Errorf("parquet: %w", err)
	}
	return &parquetSource{
		f:   f,
		pf:  pf,
		r:   parquet.NewGenericReader[map[string]any](pf, pf.Schema()),
		buf: make([]map[string]any, parquetBatch),
	}, nil
}

func (s *parquetSource) next() (v value, err error) {
	// parquet-go panics on some corrupt pages; a bad file must be an error.
	defer func() {
		if p := recover(); p != nil {
			v, err = value{}, &RowError{Kind: "invalid parquet", stop: true, Reason: fmt.Sprintf("parquet: corrupt file: %v", p)}
		}
	}()
	if s.pos == s.n {
		if s.done {
			return value{}, io.EOF
		}
		for i := range s.buf {
			if s.buf[i] == nil {
				s.buf[i] = map[string]any{}
			}
			clear(s.buf[i])
		}
		n, err := s.r.Read(s.buf)
		s.pos, s.n = 0, n
		if err == io.EOF {
			s.done = true
		} else if err != nil {
			return value{}, &RowError{Kind: "invalid parquet", stop: true, Reason: fmt.Sprintf("parquet: %v", err)}
		}
		if n == 0 {
			return value{}, io.EOF
		}
	}
	row := s.buf[s.pos]
	s.pos++
	if !validStrings(map[string]any(row)) {
		return value{}, rowErr("invalid UTF-8", "a string of the row is not UTF-8; re-encode the column as UTF-8")
	}
	raw, err := json.Marshal(row)
	if err != nil {
		return value{}, &RowError{Kind: "invalid parquet", Reason: fmt.Sprintf("parquet row: %v", err)}
	}
	return value{raw: raw}, nil
}

func (s *parquetSource) count() (int, error) { return int(s.pf.NumRows()), nil }
func (s *parquetSource) kind() string        { return "parquet" }
func (s *parquetSource) close() error {
	return closers{s.r, s.f}.Close()
}
