package proc

import (
	"strings"
	"testing"
)

// TestExpand: only {name} is a placeholder; JSON, Go and jsonpath
// templates pass as written, and ${VAR} is the environment's.
func TestExpand(t *testing.T) {
	known := []string{"shard", "index", "count", "out", "manifest", "version"}
	vals := map[string]string{"shard": "/d/shard-3.jsonl", "index": "3", "count": "8", "out": "/o", "manifest": "/o/manifest.json", "version": "ab12"}
	tests := []struct {
		name, in, want, err string
	}{
		{"whole item", "{shard}", "/d/shard-3.jsonl", ""},
		{"inside an item", "--rank={index}/{count}", "--rank=3/8", ""},
		{"several", "{out}/hs/{version}/{index}", "/o/hs/ab12/3", ""},
		{"none", "--nproc_per_node", "--nproc_per_node", ""},
		{"JSON passes through", `{"pip": ["torch"], "env_vars": {"A": "{index}"}}`, `{"pip": ["torch"], "env_vars": {"A": "3"}}`, ""},
		{"Go template passes through", "--template={{.status.succeeded}}", "--template={{.status.succeeded}}", ""},
		{"jsonpath passes through", "-o=jsonpath={.items[0].metadata.name}", "-o=jsonpath={.items[0].metadata.name}", ""},
		{"doubled braces are a literal placeholder", "{{index}}-{index}", "{index}-3", ""},
		{"a brace with a space", "{ index }", "{ index }", ""},
		{"an unclosed brace", "{index", "{index", ""},
		{"empty", "", "", ""},
		{"the environment's", "${MODEL_PATH}/{index}", "${MODEL_PATH}/3", ""},
		{"unknown", "--rank={rank}", "", `unknown placeholder {rank}; placeholders: {shard} {index} {count} {out} {manifest} {version} (write {{rank}} for a literal {rank})`},
		{"misspelt", "{shrad}", "", `unknown placeholder {shrad} (did you mean "shard"?)`},
		{"case matters", "{Index}", "", `unknown placeholder {Index} (did you mean "index"?)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Expand(tt.in, vals, known)
			switch {
			case tt.err != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.err)):
				t.Errorf("Expand(%q) error %v; want %q", tt.in, err, tt.err)
			case tt.err == "" && (err != nil || got != tt.want):
				t.Errorf("Expand(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
			}
		})
	}
}
