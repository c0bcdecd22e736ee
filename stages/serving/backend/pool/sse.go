package pool

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"
)

// ErrTruncated reports a stream that ended before its [DONE] event.
var ErrTruncated = errors.New("stream ended before [DONE]")

// errDone stops reading when the stream says it is complete.
var errDone = errors.New("done")

// Events reads a server-sent-event stream, calling fn with each data
// payload. Comment lines (": OPENROUTER PROCESSING") and other fields are
// skipped; multi-line data is joined with newlines as the SSE spec says.
// It returns nil after "data: [DONE]", ErrTruncated when the body ends
// without it, and the first error fn returns. fn may return Done to stop
// early. data is only valid during fn: its memory serves later events and
// streams.
func Events(r io.Reader, fn func(data []byte) error) error {
	er := eventReaders.Get().(*eventReader)
	er.br.Reset(r)
	data := er.data[:0]
	defer func() {
		er.br.Reset(nil)
		if cap(data) <= maxKeptEvent {
			er.data = data[:0]
		}
		eventReaders.Put(er)
	}()
	br := er.br
	have := false
	dispatch := func() error {
		if !have {
			return nil
		}
		have = false
		if bytes.Equal(data, []byte("[DONE]")) {
			return errDone
		}
		err := fn(data)
		data = data[:0]
		return err
	}
	for {
		line, err := br.ReadSlice('\n')
		if err == bufio.ErrBufferFull {
			// A long event: gather the rest of the line.
			long := append([]byte(nil), line...)
			for err == bufio.ErrBufferFull {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if err != nil && err != io.EOF {
			return err
		}
		eof := err == io.EOF
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if e := dispatch(); e != nil {
				return done(e)
			}
		case line[0] == ':':
		default:
			if v, ok := bytes.CutPrefix(line, []byte("data:")); ok {
				v = bytes.TrimPrefix(v, []byte(" "))
				if have {
					data = append(data, '\n')
				}
				data = append(data, v...)
				have = true
			}
		}
		if eof {
			if e := dispatch(); e != nil {
				return done(e)
			}
			return ErrTruncated
		}
	}
}

// eventReader is the read buffer of one stream and its event's data, kept
// for the next stream: a 64 KiB buffer made per streamed request was 8% of
// the client's CPU at 1,000 in flight, and collecting them as much again.
type eventReader struct {
	br   *bufio.Reader
	data []byte
}

var eventReaders = sync.Pool{New: func() any { return &eventReader{br: bufio.NewReaderSize(nil, 64<<10)} }}

// maxKeptEvent bounds the event buffer kept for reuse, so one huge event
// does not pin its memory for the rest of the run.
const maxKeptEvent = 256 << 10

// Done may be returned by an Events callback to stop reading without error.
var Done = errDone

func done(err error) error {
	if err == errDone {
		return nil
	}
	return err
}
