package promtext

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, c := range []struct {
		name, text string
		want       []Sample
	}{
		{"vLLM's counter, its _created gauge and comments",
			"# HELP vllm:spec_decode_num_drafts_total Number of spec decoding drafts.\n" +
				"# TYPE vllm:spec_decode_num_drafts_total counter\n" +
				"vllm:spec_decode_num_drafts_total{model_name=\"m\",engine=\"0\"} 12.0\n" +
				"vllm:spec_decode_num_drafts_created{model_name=\"m\",engine=\"0\"} 1.7e+09\n",
			[]Sample{
				{"vllm:spec_decode_num_drafts_total", map[string]string{"model_name": "m", "engine": "0"}, 12},
				{"vllm:spec_decode_num_drafts_created", map[string]string{"model_name": "m", "engine": "0"}, 1.7e9},
			}},
		{"no labels, a timestamp, blank lines",
			"\nsglang:num_running_reqs 3 1700000000000\n\n",
			[]Sample{{"sglang:num_running_reqs", nil, 3}}},
		{"escapes, spaces and a trailing comma",
			`x{path="C:\\dir",q="say \"hi\"\n", } +Inf`,
			[]Sample{{"x", map[string]string{"path": `C:\dir`, "q": "say \"hi\"\n"}, math.Inf(1)}}},
		{"empty labels", `up{} 1`, []Sample{{"up", map[string]string{}, 1}}},
	} {
		got, err := Parse(strings.NewReader(c.text))
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: got %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
}

func TestParse_Errors(t *testing.T) {
	for _, c := range []struct{ text, want string }{
		{"ok 1\nbroken", `line 2 "broken": no value`},
		{`x{a="1} 2`, "unterminated value"},
		{`x{a="1" 2`, `want name="value"`},
		{`x{a=1} 2`, `want name="value"`},
		{`x{a="\t"} 2`, `escape \t`},
		{"x one", `value "one"`},
		{"x 1 2 3", "at most a timestamp"},
	} {
		if _, err := Parse(strings.NewReader(c.text)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want %q", c.text, err, c.want)
		}
	}
}
