package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func inspectEnv() (*cmdEnv, *bytes.Buffer, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	return &cmdEnv{stdout: &stdout, stderr: &stderr, getenv: func(string) string { return "" }}, &stdout, &stderr
}

func TestInspect_ListsEveryProblem(t *testing.T) {
	p := filepath.Join(t.TempDir(), "chat.jsonl")
	rows := `{"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo","tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}],"tools":[{"name":"f"}]}
{"messages":[{"role":"user","content":"hi"
{"messages":[{"role":"assistant","content":"no prompt"}]}
{"messages":[{"role":"system","content":"s"},{"role":"user","content":"again"}]}
`
	if err := os.WriteFile(p, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	env, stdout, stderr := inspectEnv()
	if code := runMain(env, []string{"inspect", "-sample", "1", p}); code != exitFailure {
		t.Fatalf("exit %d, want %d (problems found); stderr %s", code, exitFailure, stderr)
	}
	out := stdout.String()
	for _, want := range []string{
		"shape      messages",
		"records    2 loaded, 2 bad",
		"roles      system 1, user 2, assistant 1",
		"tools      f (1)",
		"1 tool call, 0 messages with reasoning, 0 records with turns",
		p + ":2:42: row is not valid JSON (unexpected end of JSON input)",
		p + ":3: messages: conversation has no user message",
		`"content": "again"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(stderr.String(), "1 of 1 file has problems") {
		t.Errorf("stderr = %q", stderr)
	}
}

func TestInspect_JSONAndMapping(t *testing.T) {
	p := filepath.Join(t.TempDir(), "odd.jsonl")
	if err := os.WriteFile(p, []byte(`{"dialog":[{"speaker":"customer","text":"hi"},{"speaker":"agent","text":"yo"}]}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env, stdout, stderr := inspectEnv()
	args := []string{"inspect", "-json", "-map", "messages=dialog,role=speaker,content=text,role.user=customer|client,role.assistant=agent", p}
	if code := runMain(env, args); code != exitOK {
		t.Fatalf("exit %d; stderr %s", code, stderr)
	}
	var rep inspectReport
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Records != 1 || rep.Roles["user"] != 1 || rep.Roles["assistant"] != 1 || len(rep.Problems) != 0 || rep.Sample == nil {
		t.Errorf("report = %+v", rep)
	}
}

func TestInspect_Usage(t *testing.T) {
	env, _, stderr := inspectEnv()
	if code := runMain(env, []string{"inspect"}); code != exitUsage {
		t.Errorf("no files: exit %d, want %d", code, exitUsage)
	}
	if code := runMain(env, []string{"inspect", "-map", "messages", "x.jsonl"}); code != exitUsage {
		t.Errorf("bad -map: exit %d, want %d; %s", code, exitUsage, stderr)
	}
	if code := runMain(env, []string{"inspect", filepath.Join(t.TempDir(), "missing.jsonl")}); code != exitFailure {
		t.Errorf("missing file: exit %d, want %d", code, exitFailure)
	}
}
