package main

import (
	"context"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/eaglet-dev/eaglet/engine/enginetest"
)

func TestSimServer_ServesUntilCancelled(t *testing.T) {
	var stderr enginetest.Log
	env := &cmdEnv{stdout: io.Discard, stderr: &stderr, getenv: func(string) string { return "k" }}
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		errc <- runSimServer(ctx, env, []string{"-addr", "127.0.0.1:0", "-api-key-env", "KEY", "-mean-tokens", "20",
			"-tokenizer", "../../internal/tokenizer/testdata/qwen3"})
	}()
	addr := regexp.MustCompile(`http://[0-9.:]+`)
	var url string
	for deadline := time.Now().Add(5 * time.Second); url == "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		url = addr.FindString(stderr.String())
	}
	if url == "" {
		t.Fatalf("no address in %q", stderr.String())
	}
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
