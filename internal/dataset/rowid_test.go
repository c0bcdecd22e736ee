package dataset

import "testing"

func TestRowID(t *testing.T) {
	for _, tc := range []struct{ row, want string }{
		{`{"id": "abc", "messages": []}`, "abc"},
		{`{"messages": [{"id": "inner"}], "id": 42}`, "42"},
		{`{"question_id": 81, "turns": ["a"]}`, "81"},
		{`{"uuid": "u-1", "id": "first"}`, "first"},
		{`{"conversation_id": "c\"1", "x": {"id": "no"}}`, `c"1`},
		{`{"text": "id: 7"}`, ""},
		{`{"id": null, "uuid": "u"}`, "u"},
		{`{"id": {"nested": 1}}`, ""},
		{`"just a prompt"`, ""},
		{`[{"role": "user"}]`, ""},
		{`{"id": "cut`, ""},
		{` { "id" : -3.5 } `, "-3.5"},
		{`{"x": "ends in a backslash\\", "id": "after"}`, "after"},
		{`{"x": "a \\\" quote", "id": "after"}`, "after"},
		{`{"id": "a\\"}`, `a\`},
	} {
		if got := rowID([]byte(tc.row)); got != tc.want {
			t.Errorf("rowID(%s) = %q, want %q", tc.row, got, tc.want)
		}
	}
}
