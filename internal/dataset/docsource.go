package dataset

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// docSource reads one JSON document (an array of rows, one object) or
// several concatenated ones, streaming the elements of a top-level array.
type docSource struct {
	lc      *lineCounter
	dec     *json.Decoder
	c       io.Closer
	suffix  string
	first   byte // first non-blank byte of the file
	started bool
	inArray bool
	arrays  bool // the file opened with an array
	values  int  // top-level values read
	queued  *value
}

func newDocSource(r io.Reader, first byte, suffix string, c io.Closer) *docSource {
	lc := &lineCounter{r: r}
	return &docSource{lc: lc, dec: json.NewDecoder(lc), c: c, suffix: suffix, first: first}
}

func (s *docSource) next() (value, error) {
	if s.queued != nil {
		v := *s.queued
		s.queued = nil
		return v, nil
	}
	if !s.started {
		s.started = true
		if s.first == '[' {
			return s.openArray()
		}
	}
	if s.inArray {
		if s.dec.More() {
			return s.decode()
		}
		if _, err := s.dec.Token(); err != nil {
			return value{}, s.syntax(err)
		}
		s.inArray = false
	}
	v, err := s.decode()
	if err == nil {
		s.values++
	}
	return v, err
}

// openArray consumes a top-level '[' and reads its first element: an array
// of messages is one conversation, anything else is an array of rows.
func (s *docSource) openArray() (value, error) {
	s.arrays = true
	if _, err := s.dec.Token(); err != nil {
		return value{}, s.syntax(err)
	}
	if !s.dec.More() {
		_, err := s.dec.Token()
		if err != nil {
			return value{}, s.syntax(err)
		}
		return s.next()
	}
	first, err := s.decode()
	if err != nil {
		return value{}, err
	}
	if !looksLikeMessage(first.raw) {
		s.inArray = true
		return first, nil
	}
	conv := append([]byte{'['}, first.raw...)
	for s.dec.More() {
		el, err := s.decode()
		if err != nil {
			return value{}, err
		}
		conv = append(append(conv, ','), el.raw...)
	}
	if _, err := s.dec.Token(); err != nil {
		return value{}, s.syntax(err)
	}
	return value{raw: append(conv, ']'), line: first.line}, nil
}

func (s *docSource) decode() (value, error) {
	var raw json.RawMessage
	if err := s.dec.Decode(&raw); err != nil {
		if err == io.EOF {
			return value{}, io.EOF
		}
		return value{}, s.syntax(err)
	}
	end := s.dec.InputOffset()
	trimmed := bytes.TrimLeft(raw, " \t\r\n")
	start := end - int64(len(trimmed))
	return value{raw: trimmed, line: s.lc.lineAt(start)}, nil
}

// syntax turns a decode error into a fatal row error: inside one JSON
// document nothing after a syntax error can be trusted.
func (s *docSource) syntax(err error) error {
	line := 0
	var se *json.SyntaxError
	if errors.As(err, &se) {
		line = s.lc.lineAt(se.Offset)
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || err == io.EOF {
		line = s.lc.lineAt(s.lc.base + int64(len(s.lc.buf)))
		err = errors.New("the file ends in the middle of a JSON value (truncated?)")
	}
	return &RowError{Line: line, Kind: "invalid JSON", stop: true,
		Reason: fmt.Sprintf("invalid JSON: %v; the file is one JSON document, so nothing after this point can be read: fix the file", err)}
}

func (s *docSource) count() (int, error) {
	n := 0
	for {
		v, err := s.next()
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
		if rows, ok := splitRows(v); ok {
			n += len(rows)
			continue
		}
		n++
	}
}

func (s *docSource) kind() string {
	switch {
	case s.arrays:
		return "json array" + s.suffix
	case s.values > 1:
		return "concatenated json" + s.suffix
	}
	return "json" + s.suffix
}

func (s *docSource) close() error { return s.c.Close() }

// lineCounter passes bytes through to a json.Decoder and maps the
// decoder's byte offsets back to line numbers. It keeps only the bytes
// between the last mapped offset and the decoder's read-ahead.
type lineCounter struct {
	r     io.Reader
	buf   []byte // bytes read from offset base on
	base  int64
	lines int // newlines before base
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.buf = append(c.buf, p[:n]...)
	return n, err
}

// lineAt returns the 1-based line of offset off; offsets must not go back.
func (c *lineCounter) lineAt(off int64) int {
	k := int(off - c.base)
	if k < 0 {
		k = 0
	}
	if k > len(c.buf) {
		k = len(c.buf)
	}
	c.lines += bytes.Count(c.buf[:k], []byte{'\n'})
	c.buf = append(c.buf[:0], c.buf[k:]...)
	c.base += int64(k)
	return c.lines + 1
}
