package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// canaries are secrets planted in every place a spec can carry one, by the
// variable (or literal) that carries each.
var canaries = map[string]string{
	"HF_TOKEN":       "hf_CANARYhftoken0001",
	"OPENAI_API_KEY": "CANARYapikey0002",
	"DB_PASSWORD":    "CANARYpassword0003",
	"MY_SECRET_ARG":  "CANARYsecretarg0004",
	"MODEL_FLAG":     "sk-CANARYbyvalue0005", // its name says nothing; its value does
	"EXTRA_HEADER":   "CANARYheader0006",
}

// literalCanaries are secrets written into the spec itself, known as such
// by where they stand.
var literalCanaries = []string{"CANARYliteralkey0007", "CANARYliteralenv0008", "CANARYliteralhdr0009"}

// secretSpec hands the chat prompts, answered by the sim, to a command
// whose argv and env carry every canary.
func secretSpec(t *testing.T, dir string) string {
	t.Helper()
	data, tok := handoffInputs(t)
	spec := fmt.Sprintf(`version: 1
name: secrets
state: state.db
datasets: {chat: {source: %s/chat.jsonl}}
endpoints:
  sim:
    api: sim
    api_key: %s
    headers: {Authorization: "Bearer ${OPENAI_API_KEY}", X-Api-Key: %s, X-Extra-Token: "${EXTRA_HEADER}"}
    options: {seed: 4, mean_tokens: 40}
stages:
  - {name: load, uses: load, foreach: datasets}
  - {name: cap, uses: cap, needs: [load], foreach: datasets, with: {max_samples: 6, seed: 1}}
  - {name: generate, uses: generate, needs: [cap], foreach: datasets, with: {max_tokens: 100}}
  - name: handoff
    uses: handoff
    needs: [generate]
    with:
      out: out
      shards: 2
      tokenizer: %s
      run:
        argv: [sh, -c, 'echo "$0" > "$1"', "tok=${HF_TOKEN} pw=${DB_PASSWORD} arg=${MY_SECRET_ARG} flag=${MODEL_FLAG}", "{out}/hs-{index}.txt"]
        outputs: "{out}/hs-{index}.txt"
        env: {HF_TOKEN: "${HF_TOKEN}", SERVICE_TOKEN: %s}
`, data, literalCanaries[0], literalCanaries[2], tok, literalCanaries[1])
	path := filepath.Join(dir, "spec.yaml")
	if err := os.WriteFile(path, []byte(spec), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestCLI_CanariesNeitherStoredNorPrinted plants a canary in every place a
// spec can carry a secret, runs the pipeline, then rotates every variable:
// no canary is in the store's bytes or in anything eaglet printed or wrote
// beside the command's own output, and the rotation reruns nothing.
func TestCLI_CanariesNeitherStoredNorPrinted(t *testing.T) {
	dir := t.TempDir()
	spec := secretSpec(t, dir)
	var printed strings.Builder
	run := func(env map[string]string, args ...string) string {
		t.Helper()
		code, out, errOut := eagletEnv(env, args...)
		printed.WriteString(out + errOut)
		if code != exitOK && code != exitChanges {
			t.Fatalf("eaglet %s: exit %d\n%s%s", strings.Join(args, " "), code, out, errOut)
		}
		return out + errOut
	}
	run(canaries, "plan", spec)
	run(canaries, "run", spec)
	run(canaries, "status", spec)
	run(canaries, "report", spec)

	rotated := map[string]string{}
	for k, v := range canaries {
		rotated[k] = v + "rotated"
	}
	if out := run(rotated, "plan", "--detailed-exitcode", spec); !strings.Contains(out, "everything is up to date") {
		t.Errorf("plan after rotating every secret is not up to date:\n%s", out)
	}
	if out := run(rotated, "run", spec); !strings.Contains(out, "everything is up to date") {
		t.Errorf("run after rotating every secret reran something:\n%s", out)
	}

	all := append([]string{}, literalCanaries...)
	for _, v := range canaries {
		all = append(all, v)
	}
	check := func(where string, b []byte) {
		for _, c := range all {
			if bytes.Contains(b, []byte(c)) {
				t.Errorf("%s holds the canary %s", where, c)
			}
		}
	}
	check("eaglet's output", []byte(printed.String()))
	filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "spec.yaml" || strings.HasPrefix(d.Name(), "hs-") {
			return err // the spec and what the command itself wrote hold them as they should
		}
		b, _ := os.ReadFile(path)
		rel, _ := filepath.Rel(dir, path)
		check(rel, b)
		return nil
	})
	// The command itself was given the values.
	found, _ := filepath.Glob(filepath.Join(dir, "out", "current", "hs-0.txt"))
	if len(found) != 1 {
		t.Fatalf("the command's output: found %v", found)
	}
	if b, _ := os.ReadFile(found[0]); !bytes.Contains(b, []byte("tok="+canaries["HF_TOKEN"])) {
		t.Errorf("the command did not get the token: %q", b)
	}
}
