package main

import (
	"bufio"
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

func TestSimServer_ServesUntilCancelled(t *testing.T) {
	// The test reads the log as it is written and goes on at the line with
	// the address, however long loading the tokenizer takes.
	logs, stderr := io.Pipe()
	env := &cmdEnv{stdout: io.Discard, stderr: stderr, getenv: func(string) string { return "k" }}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- runSimServer(ctx, env, []string{"-addr", "127.0.0.1:0", "-api-key-env", "KEY", "-mean-tokens", "20",
			"-tokenizer", "../../internal/tokenizer/testdata/qwen3"})
		stderr.Close()
	}()
	addr := regexp.MustCompile(`http://[0-9.:]+`)
	var url string
	var logged strings.Builder
	for sc := bufio.NewScanner(logs); url == "" && sc.Scan(); {
		logged.WriteString(sc.Text() + "\n")
		url = addr.FindString(sc.Text())
	}
	if url == "" {
		t.Fatalf("the server ended (%v) without an address in %q", <-errc, logged.String())
	}
	go io.Copy(io.Discard, logs)
	// Qwen3 reads ten digits as ten tokens, where sim tokens make one.
	req, _ := http.NewRequest("POST", url+"/v1/completions", strings.NewReader(`{"prompt":"0123456789","max_tokens":50}`))
	req.Header.Set("Authorization", "Bearer k")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"text_completion"`) || !strings.Contains(string(body), `"prompt_tokens":10,`) {
		t.Fatalf("status %d body %s", resp.StatusCode, body)
	}
	cancel()
	if err := <-errc; err != nil {
		t.Fatalf("run: %v", err)
	}
}

func TestSimServer_BadFlags(t *testing.T) {
	env := &cmdEnv{stdout: io.Discard, stderr: io.Discard, getenv: func(string) string { return "" }}
	for _, args := range [][]string{{"-nope"}, {"-fail-500", "0.7", "-fail-429", "0.5"}, {"-api-key-env", "MISSING"}, {"extra"}, {"-tokenizer", "/no/such/model"}} {
		if code := simExitCode(runSimServer(context.Background(), env, args)); code != exitUsage {
			t.Errorf("%q: exit %d, want %d", args, code, exitUsage)
		}
	}
	// A tokenizer without a chat template cannot count chat prompts.
	err := runSimServer(context.Background(), env, []string{"-tokenizer", "../../internal/tokenizer/testdata/gpt_oss"})
	if simExitCode(err) != exitUsage || !strings.Contains(err.(*exitError).err.Error(), "no chat template (counting chat prompts as the model does needs its template") {
		t.Errorf("a tokenizer without a template: %v; want a usage error saying what is missing", err)
	}
}

func simExitCode(err error) int {
	if ee, ok := err.(*exitError); ok {
		return ee.code
	}
	return -1
}
