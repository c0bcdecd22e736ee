package dataset

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// BenchmarkCheckText measures the UTF-8 and surrogate check on a 4 KB row,
// mostly English with some escapes, against decoding it (about 60 MB/s).
func BenchmarkCheckText(b *testing.B) {
	raw := []byte(`{"messages":[{"role":"user","content":"` + strings.Repeat(`The quick brown fox jumps over the lazy dog.\n`, 80) + strings.Repeat(`héllo wörld \u00e9 `, 8) + `"}]}`)
	b.SetBytes(int64(len(raw)))
	for b.Loop() {
		if checkText(raw) != nil {
			b.Fatal("valid row refused")
		}
	}
}

// TestPlain puts every byte value at every offset of strings around the
// eight-byte steps plain takes, and compares it with the byte-by-byte rule.
func TestPlain(t *testing.T) {
	want := func(b []byte) bool {
		for _, c := range b {
			if c == '\\' || c == '"' || c < 0x20 {
				return false
			}
		}
		return utf8.Valid(b)
	}
	for n := range 20 {
		for at := range n {
			for c := range 256 {
				b := []byte(strings.Repeat("a", n))
				b[at] = byte(c)
				if got := plain(b); got != want(b) {
					t.Fatalf("plain(%q) = %v, want %v", b, got, !got)
				}
			}
		}
	}
	for _, s := range []string{"", "héllo wörld, ok", "12345678é", "1234567\xc3\xa9", "1234567\xc3", "\u2028 is plain JSON"} {
		if got := plain([]byte(s)); got != want([]byte(s)) {
			t.Errorf("plain(%q) = %v, want %v", s, got, !got)
		}
	}
}
