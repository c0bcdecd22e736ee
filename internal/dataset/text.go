package dataset

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"unicode/utf8"
)

// ErrNoRows is returned (wrapped, with the reason) when a file holds no rows
// at all: an empty file, only blank lines, an empty JSON array. A dataset
// of nothing is a wrong path or a broken export far more often than intent.
var ErrNoRows = errors.New("no rows")

// noRows says why the file at path held no rows.
func noRows(path string, src source, values int) error {
	why := "it holds no rows"
	if fi, err := os.Stat(path); err == nil && fi.Size() == 0 {
		why = "the file is empty (0 bytes)"
	} else if values > 0 {
		why = "it holds only empty JSON arrays"
	} else if ls, ok := src.(*lineSource); ok {
		why = fmt.Sprintf("it holds only blank lines (%d)", ls.lr.n)
	} else if ds, ok := src.(*docSource); ok && ds.arrays {
		why = "it holds an empty JSON array"
	}
	return fmt.Errorf("dataset %s: %w: %s; check `source:`", path, ErrNoRows, why)
}

// checkText refuses a row whose text would reach the model changed: bytes
// that are not UTF-8 (Go's JSON decoder turns each into U+FFFD) and
// \u escapes of lone UTF-16 surrogates (likewise). Such a row is a row
// error under the dataset's on_error, never silently altered.
func checkText(raw []byte) *RowError {
	if !utf8.Valid(raw) {
		off := invalidOffset(raw)
		end := min(off+4, len(raw))
		return rowErr("invalid UTF-8", "invalid UTF-8 at byte %d of the row (% x); re-encode the file as UTF-8 (iconv -f LATIN1 -t UTF-8, say)", off+1, raw[off:end])
	}
	if off := loneSurrogate(raw); off >= 0 {
		return rowErr("invalid UTF-8", "%s at byte %d of the row is half of a UTF-16 surrogate pair and encodes no character; fix the escape", raw[off:off+6], off+1)
	}
	return nil
}

func invalidOffset(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n == 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// loneSurrogate returns the offset of a \uD800-\uDFFF escape that is not
// a high surrogate followed by a low one, or -1.
func loneSurrogate(raw []byte) int {
	for i := 0; ; {
		j := bytes.Index(raw[i:], []byte(`\u`))
		if j < 0 {
			return -1
		}
		i += j
		if i+2 < len(raw) && raw[i+2] != 'd' && raw[i+2] != 'D' {
			i += 2 // not U+D800-U+DFFF: most escapes end here
			continue
		}
		if precededByBackslashes(raw, i)%2 == 1 {
			// `\\u`: an escaped backslash, then a plain u.
			i += 2
			continue
		}
		hi, ok := hex4(raw, i+2)
		if !ok || hi < 0xd800 || hi > 0xdfff {
			i += 2
			continue
		}
		if hi >= 0xdc00 {
			return i
		}
		lo, ok := -1, false
		if i+12 <= len(raw) && raw[i+6] == '\\' && raw[i+7] == 'u' {
			lo, ok = hex4(raw, i+8)
		}
		if !ok || lo < 0xdc00 || lo > 0xdfff {
			return i
		}
		i += 12
	}
}

func precededByBackslashes(raw []byte, i int) int {
	n := 0
	for i--; i >= 0 && raw[i] == '\\'; i-- {
		n++
	}
	return n
}

func hex4(raw []byte, i int) (int, bool) {
	if i+4 > len(raw) {
		return 0, false
	}
	v := 0
	for _, c := range raw[i : i+4] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | int(c)
	}
	return v, true
}

// validStrings reports whether every string in a decoded Parquet row is
// UTF-8: json.Marshal would replace the bytes that are not.
func validStrings(v any) bool {
	switch x := v.(type) {
	case string:
		return utf8.ValidString(x)
	case map[string]any:
		for k, e := range x {
			if !utf8.ValidString(k) || !validStrings(e) {
				return false
			}
		}
	case []any:
		for _, e := range x {
			if !validStrings(e) {
				return false
			}
		}
	}
	return true
}
