package engine_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/engine"
)

const validBase = `version: 1
name: v
vars: {max_samples: 100}
datasets:
  a: {source: a.jsonl}
endpoints:
  sim: {api: sim}
stages:
  - {name: load, uses: load, foreach: datasets}
`

// generateBase and mergeBase open a block-style stage (line 10) whose
// `with:` options follow from line 15, so option positions are easy to count.
const (
	generateBase = validBase + "  - name: g\n    uses: generate\n    needs: [load]\n    foreach: datasets\n    with:\n"
	mergeBase    = validBase + "  - name: m\n    uses: merge\n    needs: [load]\n    with:\n      out: out.jsonl\n"
)

// pairData has two datasets that expressions see differently, so an option
// can be in range for b and not for a; pairBase adds a generate stage whose
// options, as generateBase's, follow from line 15.
const (
	pairData = `version: 1
name: v
datasets:
  a: {source: a.jsonl, est_completion_tokens: 300}
  b: {source: b.jsonl, est_completion_tokens: 900}
endpoints:
  sim: {api: sim}
stages:
  - {name: load, uses: load, foreach: datasets}
`
	pairBase = pairData + "  - name: g\n    uses: generate\n    needs: [load]\n    foreach: datasets\n    with:\n"
)

func TestLoad_ValidationErrors(t *testing.T) {
	tests := []struct {
		name string
		spec string
		env  map[string]string
		// want are substrings that must all appear, each naming file:line:col.
		want []string
		// unwanted must not appear: an instance whose options are in range.
		unwanted []string
	}{
		{
			name: "unknown key with hint",
			spec: validBase + "  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_sample: 5}}\n",
			want: []string{`spec.yaml:10:69: unknown key "max_sample" (did you mean "max_samples"?)`},
		},
		{
			name: "mapping written as a list names its keys",
			spec: validBase + "  - {name: f, uses: filter, needs: [load], foreach: datasets, with: {rules: [truncated]}}\n",
			want: []string{`spec.yaml:10:77: expected a mapping (keys: empty_answer, `, "truncated", "got a list"},
		},
		{
			name: "unknown top-level key",
			spec: strings.Replace(validBase, "name: v", "name: v\nstages_: []", 1),
			want: []string{`spec.yaml:3:1: unknown key "stages_" (did you mean "stages"?)`},
		},
		{
			name: "bad expression with position inside it",
			spec: validBase + "  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: \"vars.max_samples + datset.est_completion_tokens\"}}\n",
			want: []string{`spec.yaml:10:102: expression "vars.max_samples + datset.est_completion_tokens": unknown name datset`},
		},
		{
			name: "misspelt var",
			spec: validBase + "  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: \"vars.max_smaples\"}}\n",
			want: []string{"spec.yaml:10:", "max_smaples"},
		},
		{
			name: "filter expression of the wrong type",
			spec: validBase + "  - {name: f, uses: filter, needs: [load], foreach: datasets, with: {keep: \"completion_tokens + 1\"}}\n",
			want: []string{"spec.yaml:10:", "expected bool"},
		},
		{
			name: "cycle",
			spec: validBase + "  - {name: x, uses: filter, needs: [y], with: {keep: \"true\"}}\n  - {name: y, uses: filter, needs: [x], with: {keep: \"true\"}}\n",
			want: []string{"stages form a cycle: x -> y -> x"},
		},
		{
			name: "unknown need with hint",
			spec: validBase + "  - {name: f, uses: filter, needs: [lod], foreach: datasets, with: {keep: \"true\"}}\n",
			want: []string{`spec.yaml:10:5: stage f needs unknown stage "lod" (did you mean "load"?)`},
		},
		{
			name: "missing environment variable",
			spec: strings.Replace(validBase, "source: a.jsonl", "source: \"${DATA_DIR}/a.jsonl\"", 1),
			want: []string{"spec.yaml:5:16: environment variable DATA_DIR is not set; set it or write ${DATA_DIR:-default}"},
		},
		{
			name: "default used when variable unset",
			spec: strings.Replace(validBase, "source: a.jsonl", "source: \"${DATA_DIR:-data}/a.jsonl\"", 1) + "  - {name: x, uses: nope}\n",
			want: []string{`spec.yaml:10:5: stage x: unknown kind "nope"`},
		},
		{
			name: "wrong types",
			spec: strings.Replace(validBase, "sim: {api: sim}", "sim: {api: sim, concurrency: many}", 1),
			want: []string{`spec.yaml:7:32: expected a number or auto, got "many"`},
		},
		{
			name: "string where a number is needed",
			spec: validBase + "  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: \"'abc'\"}}\n",
			want: []string{"spec.yaml:10:", "expected float64"},
		},
		{
			name: "misspelt var names the var",
			spec: validBase + "  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: \"vars.max_sample\"}}\n",
			want: []string{`unknown var max_sample (did you mean "max_samples"?)`},
		},
		{
			name: "unknown dataset format",
			spec: strings.Replace(validBase, "source: a.jsonl", "source: a.jsonl, format: alpacca", 1),
			want: []string{`spec.yaml:5:6: dataset a: unknown format "alpacca"; use auto or one of`},
		},
		{
			name: "endpoint option typo reported once, in place",
			spec: strings.Replace(validBase, "sim: {api: sim}", "sim: {api: sim, options: {mean_token: 5}}", 1) + "  - {name: g, uses: generate, needs: [load], foreach: datasets}\n",
			want: []string{`spec.yaml:7:29: unknown key "mean_token" (did you mean "mean_tokens"?)`},
		},
		{
			name: "missing dataset file",
			spec: strings.Replace(validBase, "source: a.jsonl", "source: missing.jsonl", 1),
			want: []string{"spec.yaml:5:6: dataset a: source missing.jsonl: no such file or directory"},
		},
		{
			name: "wrong type of number",
			spec: strings.Replace(validBase, "sim: {api: sim}", "sim: {api: sim, tokens_per_second: fast}", 1),
			want: []string{`spec.yaml:7:38: expected a number, got "fast"`},
		},
		{
			name: "bad order points at its value",
			spec: generateBase + "      order: shortest_first\n",
			want: []string{`spec.yaml:15:14: stage g: order is "shortest_first"; the only value is longest_first
    |       order: shortest_first
    |              ^`},
		},
		{
			name: "bad turns points at its value",
			spec: generateBase + "      turns: every\n",
			want: []string{`spec.yaml:15:14: stage g: turns is "every"; use last or all`},
		},
		{
			name: "a tab in the indentation is shown and named",
			spec: strings.Replace(validBase, "  a: {source", "\ta: {source", 1),
			want: []string{"spec.yaml:5:1: YAML syntax: found character that cannot start any token; a tab: YAML indents with spaces only\n    |  a: {source: a.jsonl}\n    | ^"},
		},
		{
			name: "every bad option of a stage at once",
			spec: generateBase + "      order: shortest_first\n      turns: every\n      timeout: soon\n",
			want: []string{`spec.yaml:15:14: stage g: order is "shortest_first"`, `spec.yaml:16:14: stage g: turns is "every"`,
				`spec.yaml:17:16: stage g: timeout "soon" is not a positive duration`, "3 problems"},
		},
		{
			name: "sampling options out of range",
			spec: generateBase + "      temperature: 7\n      top_p: 0\n      top_k: 0\n",
			want: []string{"spec.yaml:15:20: stage g: temperature is 7; use 0 to 2", "spec.yaml:16:14: stage g: top_p is 0", "spec.yaml:17:14: stage g: top_k is 0"},
		},
		{
			name: "turns all on sglang needs a tokenizer",
			spec: strings.Replace(generateBase, "sim: {api: sim}", "sim: {api: sglang, urls: [\"http://h:1\"]}", 1) + "      turns: all\n",
			want: []string{"spec.yaml:15:14: stage g: turns: all on endpoint sim, which takes token ids, needs `tokenizer:` on the stage to render each turn"},
		},
		{
			name: "turns all on completions needs a tokenizer",
			spec: strings.Replace(generateBase, "sim: {api: sim}", "sim: {api: openai, urls: [\"http://h:1/v1\"], options: {completions: true}}", 1) + "      turns: all\n",
			want: []string{"spec.yaml:15:14: stage g: turns: all on endpoint sim, which takes token ids, needs `tokenizer:`"},
		},
		{
			name: "timeout, retries and tolerance out of range",
			spec: generateBase + "      timeout: 0s\n      retries: -1\n      budget: {completion_tokens: 1000, tolerance: -0.1}\n",
			want: []string{`spec.yaml:15:16: stage g: timeout "0s" is not a positive duration`, "spec.yaml:16:16: stage g: retries is -1", "spec.yaml:17:52: stage g: budget tolerance is -0.1"},
		},
		{
			name: "bad budget scope points at its value",
			spec: generateBase + "      budget:\n        samples: 10\n        scope: run\n",
			want: []string{`spec.yaml:17:16: stage g: budget scope is "run"; use dataset or stage`},
		},
		{
			name: "unknown endpoint points at its value, with hint",
			spec: generateBase + "      endpoint: simm\n",
			want: []string{`spec.yaml:15:17: stage g: unknown endpoint "simm" (did you mean "sim"?); endpoints: [sim]`},
		},
		{
			name: "merge weight of an unknown dataset points at its name",
			spec: mergeBase + "      weights: {a: 1, b: 2}\n",
			want: []string{`spec.yaml:15:23: stage m: weights name unknown dataset "b" (did you mean "a"?); datasets: [a]`},
		},
		{
			name: "bad foreach points at its value",
			spec: validBase + "  - {name: f, uses: filter, needs: [load], foreach: dataset, with: {keep: \"true\"}}\n",
			want: []string{`spec.yaml:10:53: stage f: foreach is "dataset"; the only value is datasets`},
		},
		{
			name: "merge with foreach points at foreach",
			spec: strings.Replace(mergeBase, "    needs: [load]\n", "    needs: [load]\n    foreach: datasets\n", 1),
			want: []string{"spec.yaml:13:14: stage m: remove `foreach:`; merge takes every dataset from its needs and writes one file" + `, which per-dataset instances would each overwrite
    |     foreach: datasets
    |              ^`},
		},
		{
			name: "absurd handoff shards are refused with the limit",
			spec: validBase + "  - name: h\n    uses: handoff\n    needs: [load]\n    with:\n      out: out\n      format: specforge\n      shards: 100000000\n",
			want: []string{"spec.yaml:16:15: stage h: shards is 100000000; use at most 1024: every shard is a file held open, with a 256 KiB buffer, while a version is written"},
		},
		{
			name: "two merges writing one file",
			spec: mergeBase + "  - {name: m2, uses: merge, needs: [load], with: {out: ./out.jsonl}}\n",
			want: []string{"spec.yaml:15:56: stage m2: out ./out.jsonl is also written by stage m (line 10); write it elsewhere"},
		},
		{
			name: "merge writing the state store",
			spec: strings.Replace(mergeBase, "out: out.jsonl", "out: .eaglet/v.db", 1),
			want: []string{"spec.yaml:14:12: stage m: out .eaglet/v.db is the state store; write it elsewhere"},
		},
		{
			name: "merge writing over a dataset's source",
			spec: strings.Replace(mergeBase, "out: out.jsonl", "out: a.jsonl", 1),
			want: []string{"spec.yaml:14:12: stage m: out a.jsonl is the source of dataset a; write it elsewhere"},
		},
		{
			name: "max_tokens of 0 for one dataset points at its value",
			spec: pairBase + "      max_tokens: \"dataset.est_completion_tokens - 300\"\n",
			want: []string{`spec.yaml:15:19: g[a]: max_tokens evaluates to 0; want at least 1
    |       max_tokens: "dataset.est_completion_tokens - 300"
    |                   ^`},
			unwanted: []string{"g[b]"},
		},
		{
			name:     "division by zero for one dataset",
			spec:     pairBase + "      max_tokens: \"9000 / (dataset.est_completion_tokens - 300)\"\n",
			want:     []string{`spec.yaml:15:19: g[a]: "9000 / (dataset.est_completion_tokens - 300)" evaluated to +Inf (a division by zero?)`},
			unwanted: []string{"g[b]"},
		},
		{
			name:     "share out of range for one dataset",
			spec:     pairBase + "      share: \"dataset.est_completion_tokens / 300 - 1\"\n",
			want:     []string{`spec.yaml:15:14: g[a]: share evaluates to 0; want a finite number above 0`},
			unwanted: []string{"g[b]"},
		},
		{
			name:     "negative budget for one dataset",
			spec:     pairBase + "      budget:\n        samples: \"600 - dataset.est_completion_tokens\"\n",
			want:     []string{`spec.yaml:16:18: g[b]: budget samples evaluates to -300; want a finite number, 0 or more`},
			unwanted: []string{"g[a]"},
		},
		{
			name: "budget without a limit",
			spec: pairBase + "      budget: {tolerance: 0.1}\n",
			want: []string{`spec.yaml:15:15: stage g: budget needs at least one of completion_tokens, total_tokens, samples, dollars`},
		},
		{
			name:     "concurrency below 1 for one dataset",
			spec:     strings.Replace(pairBase, "    foreach: datasets\n    with:\n", "    foreach: datasets\n    concurrency: \"dataset.name == 'a' ? 0 : 8\"\n", 1),
			want:     []string{`spec.yaml:14:18: g[a]: concurrency evaluates to 0; want at least 1`},
			unwanted: []string{"g[b]"},
		},
		{
			name: "negative cap in every instance",
			spec: pairData + "  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: \"dataset.est_completion_tokens / -100\"}}\n",
			want: []string{
				`spec.yaml:10:82: cap[a]: max_samples evaluates to -3; want 0 or more`,
				`spec.yaml:10:82: cap[b]: max_samples evaluates to -9; want 0 or more`,
				"2 problems",
			},
		},
		{
			name:     "max_tokens past the endpoint's context",
			spec:     strings.Replace(pairBase, "sim: {api: sim}", "sim: {api: sim, context: 2048}", 1) + "      max_tokens: \"dataset.est_completion_tokens * 3\"\n",
			want:     []string{`spec.yaml:15:19: g[b]: max_tokens evaluates to 2700, but endpoint sim's context is 2048 tokens, prompt and answer together: no prompt would fit`},
			unwanted: []string{"g[a]"},
		},
		{
			name:     "a problem alike in every instance is reported once",
			spec:     pairBase + "      max_tokens: -5\n",
			want:     []string{`spec.yaml:15:19: g[a], g[b]: max_tokens evaluates to -5; want at least 1`},
			unwanted: []string{"problems"},
		},
		{
			name: "every problem at once",
			spec: strings.Replace(validBase, "version: 1", "version: 2", 1) + "  - {name: x, uses: filter, needs: [zz], with: {keep: \"1 +\"}}\n",
			want: []string{"spec.yaml:1:10: spec version 2 is not supported", `needs unknown stage "zz"`, "problems"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "spec.yaml")
			for _, data := range []string{"a.jsonl", "b.jsonl"} {
				os.WriteFile(filepath.Join(filepath.Dir(path), data), nil, 0o644)
			}
			if err := os.WriteFile(path, []byte(tt.spec), 0o644); err != nil {
				t.Fatal(err)
			}
			// As `eaglet validate` does: the spec, then every instance.
			p, err := engine.Load(path, func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
			if err == nil {
				err = p.Check()
			}
			if err == nil {
				t.Fatal("spec validated; want an error")
			}
			msg := strings.ReplaceAll(err.Error(), filepath.Dir(path)+"/", "")
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error does not contain %q:\n%s", w, msg)
				}
			}
			for _, u := range tt.unwanted {
				if strings.Contains(msg, u) {
					t.Errorf("error contains %q:\n%s", u, msg)
				}
			}
		})
	}
}

func TestLoad_SecretsNeverPrinted(t *testing.T) {
	path := filepath.Join(t.TempDir(), "spec.yaml")
	os.WriteFile(filepath.Join(filepath.Dir(path), "a.jsonl"), nil, 0o644)
	spec := strings.Replace(validBase, "sim: {api: sim}", "sim: {api: sim, api_key: \"${MY_API_KEY}\"}", 1)
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := engine.Load(path, func(k string) (string, bool) { return "sk-very-secret", k == "MY_API_KEY" })
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Spec.Redact("calling with key sk-very-secret failed"); strings.Contains(got, "sk-very-secret") {
		t.Errorf("Redact left the secret in %q", got)
	}
}

// TestLoad_MissingEnvFirst: a missing environment variable is listed
// before the problems that follow from it (a source or an output path
// that lost its directory), though they come earlier in the file.
func TestLoad_MissingEnvFirst(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "spec.yaml")
	spec := strings.Replace(mergeBase, "a: {source: a.jsonl}", "a: {source: \"${DATA_DIR}/a.jsonl\"}", 1)
	spec = strings.Replace(spec, "out: out.jsonl", "out: \"${OUT_DIR}/out.jsonl\"", 1)
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := engine.Load(path, func(string) (string, bool) { return "", false })
	if err == nil {
		t.Fatal("spec validated; want an error")
	}
	var lines []string
	for _, l := range strings.Split(strings.ReplaceAll(err.Error(), dir+"/", ""), "\n") {
		if !strings.HasPrefix(l, "    |") {
			lines = append(lines, l)
		}
	}
	if len(lines) < 3 || !strings.HasPrefix(lines[0], "spec.yaml:5:16: environment variable DATA_DIR is not set") ||
		!strings.HasPrefix(lines[1], "spec.yaml:14:13: environment variable OUT_DIR is not set") {
		t.Errorf("the missing variables are not listed first:\n%s", strings.Join(lines, "\n"))
	}
}
