// Package dataset reads the conversation datasets users already have
// (OpenAI messages, ShareGPT, Alpaca, prompt-only sets, tool-calling and
// reasoning traces, as JSON, JSONL, Parquet, gzip or zstd) and turns every
// row into one canonical conv.Record.
//
// A Reader streams: it holds one row at a time, so multi-gigabyte files and
// multi-megabyte lines load in constant memory.
package dataset

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

// Options says how to read a dataset file.
type Options struct {
	// Format is "auto" (the default: detect from the first row) or a shape
	// name from Formats, forced for every row.
	Format string
	// OnError is "fail" (the default: the first bad row stops the read with
	// a *RowError) or "skip" (bad rows are counted by reason in Skipped).
	OnError string
	// Mapping names the dataset's own fields for odd shapes: canonical name
	// (see MappingKeys) to the dataset's key, or for a role (user,
	// assistant, system, tool) a comma-separated list of the words the
	// dataset uses for it.
	Mapping map[string]string
}

// Bad-row policies.
const (
	OnErrorFail = "fail"
	OnErrorSkip = "skip"
)

// RowError is a row that cannot become a conversation. Callers branch on it
// with errors.As; Reason says what is wrong and what to do.
type RowError struct {
	File string
	// Line is the 1-based line where the row starts; 0 when the input has
	// no lines (Parquet).
	Line int
	// Index is the row's 0-based position in the file.
	Index int
	// Col is the 1-based byte column of the problem on Line, when a
	// syntax error says where in the row it is; 0 otherwise.
	Col int
	// Kind is the short, stable category the skip counts are kept by.
	Kind string
	// Reason is the full explanation.
	Reason string
	// stop marks an error the input cannot be read past (broken JSON
	// inside one document): skipping does not apply.
	stop bool
	// at is the syntax error's offset in the row (json.SyntaxError's:
	// the bad byte is the at-th); 0 when not known.
	at int64
}

// place puts the error at its row's line, then, when a syntax error says
// where in the row it is, at that byte's own line and column.
func (e *RowError) place(v value) {
	e.Line = v.line
	if e.at <= 0 || e.at > int64(len(v.raw)) || v.line == 0 {
		return
	}
	before := v.raw[:e.at-1]
	if nl := bytes.LastIndexByte(before, '\n'); nl >= 0 {
		e.Line += bytes.Count(before, []byte{'\n'})
		e.Col = len(before) - nl
	} else if v.col > 0 {
		e.Col = v.col + len(before)
	}
}

// Fatal reports whether the input cannot be read past this error. After a
// RowError that is not fatal, Next may be called again to go on with the
// next row, so a caller can list every problem (eaglet inspect does).
func (e *RowError) Fatal() bool { return e.stop }

func (e *RowError) Error() string {
	if e.Line > 0 && e.Col > 0 {
		return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Line, e.Col, e.Reason)
	}
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Reason)
	}
	return fmt.Sprintf("%s: row %d: %s", e.File, e.Index, e.Reason)
}

// ErrUnknownFormat is returned by Open for a Format that names no shape.
var ErrUnknownFormat = errors.New("unknown dataset format")

// Reader yields the records of one dataset file in order.
type Reader struct {
	path    string
	opts    Options
	m       mapping
	src     source
	shape   *shape
	pending []value // rows already read from a value that held several
	index   int
	values  int // raw values read, for why a file held no rows
	skipped map[string]int
	problem *RowError // a fatal input error, returned from every Next
}

// Open opens path and detects its container (JSON, JSONL, Parquet, gzip,
// zstd) from its bytes, not its extension, which often lies. The row shape
// is detected from the first row by the first call to Next.
func Open(path string, opts Options) (*Reader, error) {
	if opts.Format == "" {
		opts.Format = "auto"
	}
	if opts.OnError == "" {
		opts.OnError = OnErrorFail
	}
	if opts.OnError != OnErrorFail && opts.OnError != OnErrorSkip {
		return nil, fmt.Errorf("dataset %s: on_error %q: want %q or %q", path, opts.OnError, OnErrorFail, OnErrorSkip)
	}
	r := &Reader{path: path, opts: opts, skipped: map[string]int{}}
	if opts.Format != "auto" {
		r.shape = shapeNamed(opts.Format)
		if r.shape == nil {
			return nil, fmt.Errorf("dataset %s: format %q: %w (known: auto, %s)", path, opts.Format, ErrUnknownFormat, joinNames())
		}
	}
	m, err := newMapping(opts.Mapping)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	r.m = m
	src, err := openSource(path)
	if err != nil {
		return nil, fmt.Errorf("dataset %s: %w", path, err)
	}
	r.src = src
	return r, nil
}

// Next returns the next record, or io.EOF after the last one; a file with
// no rows at all returns an error wrapping ErrNoRows instead. Record.Key,
// Source and Messages are set; Dataset is left to the caller.
func (r *Reader) Next() (*conv.Record, error) {
	if r.problem != nil {
		return nil, r.problem
	}
	for {
		v, err := r.nextValue()
		if err == io.EOF {
			if r.index == 0 {
				return nil, noRows(r.path, r.src, r.values)
			}
			return nil, io.EOF
		}
		if err != nil {
			var re *RowError
			if !errors.As(err, &re) {
				return nil, fmt.Errorf("dataset %s: %w", r.path, err)
			}
			if !re.Fatal() && r.opts.OnError == OnErrorSkip {
				r.skipped[re.Kind]++
				r.index++
				continue
			}
			if re.Fatal() {
				r.problem = re
			}
			return nil, re
		}
		rerr := checkText(v.raw)
		var rec *conv.Record
		if rerr == nil {
			rec, rerr = r.convert(v)
		}
		index := r.index
		r.index++
		if rerr != nil {
			rerr.File, rerr.Index = r.path, index
			rerr.place(v)
			if r.opts.OnError == OnErrorSkip {
				r.skipped[rerr.Kind]++
				continue
			}
			return nil, rerr
		}
		rec.Source = conv.Source{File: r.path, Line: v.line, Index: index, ID: rowID(v.raw)}
		rec.Key = conv.ContentKey(rec.Messages, rec.Tools)
		return rec, nil
	}
}

// nextValue returns the next row's raw value, unpacking values that hold
// several rows (a JSONL line that is itself an array of rows).
func (r *Reader) nextValue() (value, error) {
	if len(r.pending) > 0 {
		v := r.pending[0]
		r.pending = r.pending[1:]
		return v, nil
	}
	v, err := r.src.next()
	if err != nil {
		if re, ok := err.(*RowError); ok {
			re.File = r.path
			re.Index = r.index
		}
		return value{}, err
	}
	r.values++
	if rows, ok := splitRows(v); ok {
		if len(rows) == 0 {
			return r.nextValue()
		}
		r.pending = rows[1:]
		return rows[0], nil
	}
	return v, nil
}

// convert detects the shape on the first row and converts one row.
func (r *Reader) convert(v value) (*conv.Record, *RowError) {
	if r.shape == nil {
		s, err := detect(v.raw, r.m)
		if err != nil {
			return nil, err
		}
		r.shape = s
	}
	return r.shape.convert(v.raw, r.m)
}

// Detected returns the name of the row shape in use: the forced format or
// the one detected from the first row ("" before the first Next).
func (r *Reader) Detected() string {
	if r.shape == nil {
		return ""
	}
	return r.shape.name
}

// Container returns how the file's rows are stored, e.g. "jsonl", "json
// array", "concatenated json", "parquet", with "+gzip" or "+zstd".
func (r *Reader) Container() string { return r.src.kind() }

// Skipped returns the number of bad rows skipped, by RowError.Kind.
func (r *Reader) Skipped() map[string]int {
	out := make(map[string]int, len(r.skipped))
	for k, n := range r.skipped {
		out[k] = n
	}
	return out
}

// Close releases the file.
func (r *Reader) Close() error { return r.src.close() }

// Count returns the number of rows in path without converting them. It
// reads the whole file: for JSONL it counts lines (cheap, a few GB/s); for
// JSON arrays and concatenated JSON it scans every value (about the cost
// of a json.Valid pass); for Parquet it reads only the footer.
func Count(path string, opts Options) (int, error) {
	src, err := openSource(path)
	if err != nil {
		return 0, fmt.Errorf("dataset %s: %w", path, err)
	}
	defer src.close()
	n, err := src.count()
	if err != nil {
		return n, fmt.Errorf("dataset %s: %w", path, err)
	}
	if n == 0 {
		return 0, noRows(path, src, 0)
	}
	return n, nil
}
