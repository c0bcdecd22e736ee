package chat

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ardanlabs/jinja"
)

// pyVectors is testdata/chat/pystr.json.gz, made by gen/pystr.py with
// CPython and Jinja2.
type pyVectors struct {
	Python     string            `json:"python"`
	Unicode    string            `json:"unicode"`
	Space      []rune            `json:"space"`
	Assigned   [][2]rune         `json:"assigned"`
	Upper      map[string]string `json:"upper"`
	Lower      map[string]string `json:"lower"`
	Title      map[string]string `json:"title"`
	Capitalize map[string]string `json:"capitalize"`
	Inputs     []string          `json:"inputs"`
	Renders    []struct {
		Expr string   `json:"expr"`
		Out  []string `json:"out"`
	} `json:"renders"`
}

func readPyVectors(t *testing.T) *pyVectors {
	t.Helper()
	f, err := os.Open(filepath.Join(testdata, "chat", "pystr.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var v pyVectors
	if err := json.NewDecoder(zr).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return &v
}

// TestPySpace_ControlAndWhitespaceRanges walks the control and whitespace
// ranges code point by code point: Python's str.isspace() is Unicode
// White_Space plus U+001C..U+001F, and not U+200B, U+180E or U+FEFF.
func TestPySpace_ControlAndWhitespaceRanges(t *testing.T) {
	tests := []struct {
		name     string
		from, to rune
		space    bool
	}{
		{"C0 controls before tab", 0x00, 0x08, false},
		{"tab, LF, VT, FF, CR", 0x09, 0x0D, true},
		{"C0 controls", 0x0E, 0x1B, false},
		{"file, group, record, unit separators", 0x1C, 0x1F, true},
		{"space", 0x20, 0x20, true},
		{"printable ASCII", 0x21, 0x7E, false},
		{"DEL and C1 controls before NEL", 0x7F, 0x84, false},
		{"NEL", 0x85, 0x85, true},
		{"C1 controls", 0x86, 0x9F, false},
		{"no-break space", 0xA0, 0xA0, true},
		{"ogham space mark", 0x1680, 0x1680, true},
		{"Mongolian vowel separator", 0x180E, 0x180E, false},
		{"en quad to hair space", 0x2000, 0x200A, true},
		{"zero width space, joiners", 0x200B, 0x200D, false},
		{"line and paragraph separators", 0x2028, 0x2029, true},
		{"narrow no-break space", 0x202F, 0x202F, true},
		{"medium mathematical space", 0x205F, 0x205F, true},
		{"word joiner", 0x2060, 0x2060, false},
		{"ideographic space", 0x3000, 0x3000, true},
		{"byte order mark", 0xFEFF, 0xFEFF, false},
	}
	for _, tt := range tests {
		for r := tt.from; r <= tt.to; r++ {
			s := string(r)
			if got := pySpace(r); got != tt.space {
				t.Errorf("%s: U+%04X space = %v, want %v", tt.name, r, got, tt.space)
			}
			want := "a" + s + "b"
			if tt.space {
				want = "ab"
			}
			if got := pyStrip(s+"a"+s, nil, true, true) + pyStrip(s+"b"+s, nil, true, true); got != "ab" && tt.space {
				t.Errorf("%s: U+%04X not stripped: %q", tt.name, r, got)
			}
			if got := strings.Join(strings.FieldsFunc("a"+s+"b", pySpace), ""); got != want {
				t.Errorf("%s: U+%04X split: %q, want %q", tt.name, r, got, want)
			}
		}
	}
}

// TestPyStr_EveryCodePoint compares whitespace and case mappings with
// CPython's on every code point (case on those its Unicode version assigns).
func TestPyStr_EveryCodePoint(t *testing.T) {
	v := readPyVectors(t)
	space := map[rune]bool{}
	for _, r := range v.Space {
		space[r] = true
	}
	for r := rune(0); r <= 0x10FFFF; r++ {
		if pySpace(r) != space[r] {
			t.Errorf("U+%04X: space = %v, Python %v", r, pySpace(r), space[r])
		}
	}
	maps := []struct {
		name string
		fn   func(string) string
		want map[string]string
	}{
		{"upper", pyUpper, v.Upper}, {"lower", pyLower, v.Lower},
		{"title", pyTitle, v.Title}, {"capitalize", pyCapitalize, v.Capitalize},
	}
	// Lowercase letters that gained a capital after Python's Unicode
	// version (14.0; Go's tables are 17.0): a Python on a newer Unicode
	// upper-cases them as Go does.
	newer := map[rune]string{
		0x019B: "Unicode 16 added its capital U+A7DC",
		0x0264: "Unicode 16 added its capital U+A7CB",
		0xA7D3: "Unicode 17 added its capital U+A7D2",
		0xA7D5: "Unicode 17 added its capital U+A7D4",
	}
	checked := 0
	for _, a := range v.Assigned {
		for r := a[0]; r <= a[1]; r++ {
			if r >= 0xD800 && r <= 0xDFFF || newer[r] != "" {
				continue
			}
			checked++
			for _, m := range maps {
				want, ok := m.want[strconv.Itoa(int(r))]
				if !ok {
					want = string(r)
				}
				if got := m.fn(string(r)); got != want {
					t.Errorf("U+%04X %s: %q, Python %s %q", r, m.name, got, v.Python, want)
				}
			}
		}
	}
	t.Logf("%d code points compared with Python %s (Unicode %s)", checked, v.Python, v.Unicode)
}

// TestRender_StringFiltersMatchJinja2 renders each string filter and
// method over each whitespace and control code point around words, and
// over text whose case depends on context, and compares with Jinja2's.
func TestRender_StringFiltersMatchJinja2(t *testing.T) {
	v := readPyVectors(t)
	for _, r := range v.Renders {
		t.Run(r.Expr, func(t *testing.T) {
			tmpl, err := jinja.Compile(pyFilterSource(r.Expr))
			if err != nil {
				t.Fatal(err)
			}
			failed := 0
			for i, in := range v.Inputs {
				data := map[string]jinja.Value{"s": jinja.NewString(in)}
				for k, c := range pyCallables {
					data[k] = c
				}
				got, err := tmpl.RenderValues(data)
				if err != nil {
					t.Fatalf("%q: %v", in, err)
				}
				if got != r.Out[i] {
					failed++
					t.Errorf("%q: got %q, Jinja2 %q", in, got, r.Out[i])
				}
			}
			if failed > 0 {
				t.Logf("%d of %d differ", failed, len(v.Inputs))
			}
		})
	}
}

func TestPyFilterSource(t *testing.T) {
	tests := []struct{ name, src, want string }{
		{"filter", "{{ m.content | trim }}", "{{ m.content | _py_trim }}"},
		{"filter with args", "{{ x|trim('a')|upper }}", "{{ x|_py_trim('a')|_py_upper }}"},
		{"method", "{{ x.upper() + y.title( ) }}", "{{ x|_py_upper + y|_py_title }}"},
		{"method with args stays", "{{ x.strip('a') }}", "{{ x.strip('a') }}"},
		{"attribute stays", "{{ x.upper }}", "{{ x.upper }}"},
		{"text stays", "a | trim {{ 'b | trim' }} x.lower()", "a | trim {{ 'b | trim' }} x.lower()"},
		{"quotes with escapes", `{{ "a \" | trim" | trim }}`, `{{ "a \" | trim" | _py_trim }}`},
		{"other filters stay", "{{ x | tojson | length }}", "{{ x | tojson | length }}"},
		{"longer names stay", "{{ x | trimmed | lowercase }}", "{{ x | trimmed | lowercase }}"},
		{"filter block", "{%- filter upper -%}x{% endfilter %}", "{%- filter _py_upper -%}x{% endfilter %}"},
		{"statement", "{% set y = x | trim %}{% if y.lower() == 'a' %}{% endif %}", "{% set y = x | _py_trim %}{% if y|_py_lower == 'a' %}{% endif %}"},
		{"comment stays", "{# x | trim #}", "{# x | trim #}"},
		{"raw stays", "{% raw %}{{ x | trim }}'{% endraw %}{{ x|trim }}", "{% raw %}{{ x | trim }}'{% endraw %}{{ x|_py_trim }}"},
		{"closer in a string", "{{ '}}' | trim }}", "{{ '}}' | _py_trim }}"},
		{"dict literal", "{{ {'a': x | lower} }}", "{{ {'a': x | _py_lower} }}"},
		{"number", "{{ 1.5 | string }}", "{{ 1.5 | string }}"},
		{"unclosed", "{{ x | trim", "{{ x | trim"},
	}
	for _, tt := range tests {
		if got := pyFilterSource(tt.src); got != tt.want {
			t.Errorf("%s: %q\n got %q\nwant %q", tt.name, tt.src, got, tt.want)
		}
	}
}
