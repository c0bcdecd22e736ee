package draftvocab

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Files the draft vocabulary is written as, beside a handoff's manifest.
const (
	D2TFile       = "d2t.npy"
	T2DFile       = "t2d.npy"
	TokenFreqFile = "token_freq.json"
)

// Write writes d2t.npy (int64, as torch.long), t2d.npy (bool) and
// token_freq.json into dir.
func Write(dir string, m *Mapping, c Counts) error {
	d2t := m.D2T()
	buf := make([]byte, 8*len(d2t))
	for i, v := range d2t {
		binary.LittleEndian.PutUint64(buf[8*i:], uint64(v))
	}
	if err := writeFile(filepath.Join(dir, D2TFile), func(w io.Writer) error { return writeNPY(w, "<i8", len(d2t), buf) }); err != nil {
		return err
	}
	t2d := m.T2D()
	buf = make([]byte, len(t2d))
	for i, v := range t2d {
		if v {
			buf[i] = 1
		}
	}
	if err := writeFile(filepath.Join(dir, T2DFile), func(w io.Writer) error { return writeNPY(w, "|b1", len(t2d), buf) }); err != nil {
		return err
	}
	return writeFile(filepath.Join(dir, TokenFreqFile), func(w io.Writer) error { return writeFreq(w, c) })
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	err = write(w)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// npyAlign is the alignment of an .npy header: NumPy's own writer pads to
// 64 bytes so the data can be memory-mapped aligned.
const npyAlign = 64

// writeNPY writes a one-dimensional array in the .npy format, version 1.0
// (github.com/numpy/numpy, numpy/lib/format.py): magic, a little-endian
// header length, the header dict padded with spaces and ending in a
// newline, then the raw little-endian values.
func writeNPY(w io.Writer, descr string, n int, data []byte) error {
	header := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }", descr, n)
	pre := len("\x93NUMPY") + 2 + 2
	pad := npyAlign - (pre+len(header)+1)%npyAlign
	header += strings.Repeat(" ", pad%npyAlign) + "\n"
	var b []byte
	b = append(b, "\x93NUMPY\x01\x00"...)
	b = binary.LittleEndian.AppendUint16(b, uint16(len(header)))
	b = append(b, header...)
	if _, err := w.Write(b); err != nil {
		return err
	}
	_, err := w.Write(data)
	return err
}

// writeFreq writes the counts as one JSON object from id (a string, as
// JSON keys are) to count, ids ascending, one per line.
func writeFreq(w io.Writer, c Counts) error {
	ids := make([]int, 0, len(c))
	for id := range c {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var b []byte
	b = append(b, '{')
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, "\n  \""...)
		b = strconv.AppendInt(b, int64(id), 10)
		b = append(b, "\": "...)
		b = strconv.AppendInt(b, c[id], 10)
	}
	b = append(b, "\n}\n"...)
	_, err := w.Write(b)
	return err
}
