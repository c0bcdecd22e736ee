package draftvocab

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// rows are a small row set: ids and loss masks, the context unsupervised.
var rows = []struct{ ids, mask []int }{
	{[]int{1, 7, 7, 9, 4}, []int{0, 0, 1, 1, 1}},
	{[]int{1, 2, 9, 4, 4}, []int{0, 1, 1, 1, 0}},
	{[]int{3, 7, 5}, []int{1, 1, 1}},
}

func counted() Counts {
	c := Counts{}
	for _, r := range rows {
		c.Add(r.ids, r.mask)
	}
	return c
}

func TestCounts_Add(t *testing.T) {
	want := Counts{7: 2, 9: 2, 4: 2, 2: 1, 3: 1, 5: 1}
	if c := counted(); !equal(c, want) {
		t.Errorf("counts %v; want %v (the loss-mask 1 ids only)", c, want)
	}
	if n := counted().Total(); n != 9 {
		t.Errorf("total %d; want the 9 supervised tokens", n)
	}
}

func equal(a, b Counts) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

func TestBuild(t *testing.T) {
	for _, tc := range []struct {
		name         string
		size, target int
		selected     []int
		d2t          []int64
		covered      int64
		err          string
	}{
		// 4, 7 and 9 tie at 2: the lower ids win, then 2, 3 and 5 tie at 1.
		{name: "ties to the lower id", size: 2, target: 16, selected: []int{4, 7}, d2t: []int64{4, 6}, covered: 4},
		{name: "three", size: 3, target: 16, selected: []int{4, 7, 9}, d2t: []int64{4, 6, 7}, covered: 6},
		{name: "first of the ones", size: 4, target: 16, selected: []int{2, 4, 7, 9}, d2t: []int64{2, 3, 5, 6}, covered: 7},
		{name: "all supervised", size: 6, target: 16, selected: []int{2, 3, 4, 5, 7, 9}, d2t: []int64{2, 2, 2, 2, 3, 4}, covered: 9},
		// Fewer distinct ids than the size: the lowest unused ids fill it.
		{name: "filled with low ids", size: 8, target: 16, selected: []int{0, 1, 2, 3, 4, 5, 7, 9}, d2t: []int64{0, 0, 0, 0, 0, 0, 1, 2}, covered: 9},
		{name: "whole target", size: 10, target: 10, selected: []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, d2t: make([]int64, 10), covered: 9},
		{name: "id beyond target", size: 2, target: 8, err: "token id 9 is outside the target vocabulary of 8 ids"},
		{name: "larger than target", size: 17, target: 16, err: "draft vocabulary of 17 ids for a target of 16"},
		{name: "zero", size: 0, target: 16, err: "want 1 to 16"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := Build(counted(), tc.size, tc.target)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v; want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(m.Selected, tc.selected) {
				t.Errorf("selected %v; want %v", m.Selected, tc.selected)
			}
			if d := m.D2T(); !slices.Equal(d, tc.d2t) {
				t.Errorf("d2t %v; want %v", d, tc.d2t)
			}
			t2d := m.T2D()
			if len(t2d) != tc.target {
				t.Fatalf("t2d has %d entries; want the target's %d", len(t2d), tc.target)
			}
			// The consumers' own check (SpecForge's
			// validate_vocab_mapping_consistency, speculators'
			// load_vocab_mappings): nonzero(t2d) == d2t + arange(size).
			var nonzero []int
			for id, in := range t2d {
				if in {
					nonzero = append(nonzero, id)
				}
			}
			var fromD2T []int
			for i, off := range m.D2T() {
				fromD2T = append(fromD2T, i+int(off))
			}
			if !slices.Equal(nonzero, fromD2T) || len(nonzero) != tc.size {
				t.Errorf("nonzero(t2d) %v, d2t + arange %v; want the same %d ids", nonzero, fromD2T, tc.size)
			}
			if m.Covered != tc.covered || m.Total != 9 || m.Coverage() != float64(tc.covered)/9 {
				t.Errorf("covered %d of %d (%.3f); want %d of 9", m.Covered, m.Total, m.Coverage(), tc.covered)
			}
		})
	}
}

func TestCoverage_NothingCounted(t *testing.T) {
	m, err := Build(Counts{}, 4, 8)
	if err != nil {
		t.Fatal(err)
	}
	if m.Coverage() != 0 || !slices.Equal(m.Selected, []int{0, 1, 2, 3}) {
		t.Errorf("coverage %v, selected %v; want 0 and the lowest ids", m.Coverage(), m.Selected)
	}
}

// readNPY parses a one-dimensional .npy file as NumPy's format reader
// does: magic and version 1.0, the header's length, a header dict ending
// in a newline, the data.
func readNPY(t *testing.T, b []byte) (header string, data []byte) {
	t.Helper()
	if !bytes.HasPrefix(b, []byte("\x93NUMPY\x01\x00")) {
		t.Fatalf("not an .npy 1.0 file: % x", b[:min(len(b), 8)])
	}
	n := int(binary.LittleEndian.Uint16(b[8:10]))
	header = string(b[10 : 10+n])
	if (10+n)%64 != 0 || !strings.HasSuffix(header, "\n") {
		t.Errorf("header of %d bytes ends %q; want the data 64-byte aligned after a newline", n, header[len(header)-1:])
	}
	return strings.TrimRight(header, " \n"), b[10+n:]
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	m, err := Build(counted(), 3, 12)
	if err != nil {
		t.Fatal(err)
	}
	if err := Write(dir, m, counted()); err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		file, header string
		data         []byte
	}{
		{D2TFile, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }",
			[]byte{4, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0}},
		{T2DFile, "{'descr': '|b1', 'fortran_order': False, 'shape': (12,), }",
			[]byte{0, 0, 0, 0, 1, 0, 0, 1, 0, 1, 0, 0}},
	} {
		b, err := os.ReadFile(filepath.Join(dir, f.file))
		if err != nil {
			t.Fatal(err)
		}
		header, data := readNPY(t, b)
		if header != f.header || !bytes.Equal(data, f.data) {
			t.Errorf("%s: header %q, data %v; want %q, %v", f.file, header, data, f.header, f.data)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, TokenFreqFile))
	if err != nil {
		t.Fatal(err)
	}
	var freq map[string]int64
	if err := json.Unmarshal(b, &freq); err != nil {
		t.Fatalf("%s: %v", TokenFreqFile, err)
	}
	want := map[string]int64{"2": 1, "3": 1, "4": 2, "5": 1, "7": 2, "9": 2}
	if len(freq) != len(want) {
		t.Errorf("%s holds %v; want %v", TokenFreqFile, freq, want)
	}
	for k, v := range want {
		if freq[k] != v {
			t.Errorf("%s[%s] = %d; want %d", TokenFreqFile, k, freq[k], v)
		}
	}
}
