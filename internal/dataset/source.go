package dataset

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"unicode"

	"github.com/klauspost/compress/zstd"
)

// value is one row's raw JSON and the line it starts on (0 when the input
// has no lines). raw may be the source's own buffer, valid until its next
// call: a row is converted before the next is read, and every string and
// JSON value a record keeps is copied out of it.
type value struct {
	raw  []byte
	line int
	// col is the 1-based byte column where raw starts on line; 0 when not
	// known.
	col int
}

// source yields the raw rows of a file, whatever its container.
type source interface {
	// next returns the next row, io.EOF at the end, or a *RowError.
	next() (value, error)
	// count counts the rows left without converting them.
	count() (int, error)
	kind() string
	close() error
}

var (
	magicGzip    = []byte{0x1f, 0x8b}
	magicZstd    = []byte{0x28, 0xb5, 0x2f, 0xfd}
	magicParquet = []byte("PAR1")
	utf8BOM      = []byte{0xef, 0xbb, 0xbf}
)

// openSource sniffs the container from the file's first bytes.
func openSource(path string) (source, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f, 1<<16)
	head, _ := br.Peek(4)
	switch {
	case bytes.HasPrefix(head, []byte{0xff, 0xfe}) || bytes.HasPrefix(head, []byte{0xfe, 0xff}):
		f.Close()
		return nil, fmt.Errorf("the file is UTF-16 (byte order mark % x); convert it to UTF-8: iconv -f UTF-16 -t UTF-8", head[:2])
	case bytes.HasPrefix(head, magicParquet):
		src, err := openParquet(f)
		if err != nil {
			f.Close()
			return nil, err
		}
		return src, nil
	case bytes.HasPrefix(head, magicGzip):
		zr, err := gzip.NewReader(br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return openText(bufio.NewReaderSize(zr, 1<<16), "+gzip", f)
	case bytes.HasPrefix(head, magicZstd):
		zr, err := zstd.NewReader(br)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("zstd: %w", err)
		}
		return openText(bufio.NewReaderSize(zr, 1<<16), "+zstd", closers{zr.IOReadCloser(), f})
	}
	return openText(br, "", f)
}

type closers []io.Closer

func (cs closers) Close() error {
	var errs []error
	for _, c := range cs {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}

// openText decides between line mode (JSONL: every line a value, so a bad
// line is one bad row) and document mode (a JSON array, one object, or
// pretty-printed objects one after another) by whether the first non-blank
// line is a whole JSON value.
func openText(br *bufio.Reader, suffix string, c io.Closer) (source, error) {
	lr := &lineReader{br: br}
	var consumed bytes.Buffer
	for {
		line, err := lr.readLine()
		if err == io.EOF {
			return &lineSource{lr: lr, c: c, suffix: suffix}, nil
		}
		if err != nil {
			c.Close()
			return nil, err
		}
		if lr.n == 1 {
			line = bytes.TrimPrefix(line, utf8BOM)
		}
		consumed.Write(line)
		consumed.WriteByte('\n')
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			continue
		}
		if json.Valid(t) || (t[0] == '{' && t[len(t)-1] == '}') {
			return &lineSource{lr: lr, c: c, suffix: suffix, first: append([]byte(nil), t...), firstLine: lr.n, firstCol: startCol(line)}, nil
		}
		rest := io.MultiReader(bytes.NewReader(consumed.Bytes()), br)
		return newDocSource(rest, t[0], suffix, c), nil
	}
}

// lineReader reads lines of any length (no bufio.Scanner limit), reusing
// one buffer that grows to the longest line.
type lineReader struct {
	br  *bufio.Reader
	buf []byte
	n   int // lines read
}

// readLine returns the next line without its newline; the slice is valid
// until the next call.
func (l *lineReader) readLine() ([]byte, error) {
	l.buf = l.buf[:0]
	for {
		chunk, err := l.br.ReadSlice('\n')
		l.buf = append(l.buf, chunk...)
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF && len(l.buf) > 0 {
			l.n++
			return l.buf, nil
		}
		if errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("the compressed data ends in the middle of line %d (%w): the file is truncated; copy or download it again", l.n+1, err)
		}
		if err != nil {
			return nil, err
		}
		l.n++
		return bytes.TrimSuffix(l.buf[:len(l.buf)-1], []byte{'\r'}), nil
	}
}

// lineSource reads JSONL: each non-blank line is one value.
type lineSource struct {
	lr        *lineReader
	c         io.Closer
	suffix    string
	first     []byte // the line openText read to decide the mode
	firstLine int
	firstCol  int
}

// startCol is the 1-based column where line's text starts, past its
// leading white space.
func startCol(line []byte) int {
	return 1 + len(line) - len(bytes.TrimLeftFunc(line, unicode.IsSpace))
}

func (s *lineSource) next() (value, error) {
	if s.first != nil {
		v := value{raw: s.first, line: s.firstLine, col: s.firstCol}
		s.first = nil
		return s.check(v)
	}
	for {
		line, err := s.lr.readLine()
		if err != nil {
			return value{}, err
		}
		t := bytes.TrimSpace(line)
		if len(t) == 0 {
			continue
		}
		// The line reader's buffer, not a copy: copying every line was
		// a fifth of a load's allocation.
		return s.check(value{raw: t, line: s.lr.n, col: startCol(line)})
	}
}

// check rejects a line that is not JSON. Objects are left to the shape's
// decoding, which validates them anyway: checking twice costs 5% of a load.
func (s *lineSource) check(v value) (value, error) {
	if v.raw[0] != '{' && !json.Valid(v.raw) {
		var x json.RawMessage
		re := invalidJSON(json.Unmarshal(v.raw, &x))
		re.place(v)
		return value{}, re
	}
	return v, nil
}

func (s *lineSource) count() (int, error) {
	n := 0
	if s.first != nil {
		n++
		s.first = nil
	}
	for {
		line, err := s.lr.readLine()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if len(bytes.TrimSpace(line)) > 0 {
			n++
		}
	}
}

func (s *lineSource) kind() string { return "jsonl" + s.suffix }
func (s *lineSource) close() error { return s.c.Close() }

// splitRows unpacks a value that holds several rows: an array whose
// elements are not messages. An array of messages is one conversation.
func splitRows(v value) ([]value, bool) {
	if len(v.raw) == 0 || v.raw[0] != '[' {
		return nil, false
	}
	var els []json.RawMessage
	if err := json.Unmarshal(v.raw, &els); err != nil {
		return nil, false
	}
	if len(els) > 0 && looksLikeMessage(els[0]) {
		return nil, false
	}
	rows := make([]value, len(els))
	for i, el := range els {
		rows[i] = value{raw: el, line: v.line}
	}
	return rows, true
}

// looksLikeMessage reports whether raw is an object with a role or from key.
func looksLikeMessage(raw []byte) bool {
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	var probe struct {
		Role *json.RawMessage `json:"role"`
		From *json.RawMessage `json:"from"`
	}
	if json.Unmarshal(raw, &probe) != nil {
		return false
	}
	return probe.Role != nil || probe.From != nil
}
