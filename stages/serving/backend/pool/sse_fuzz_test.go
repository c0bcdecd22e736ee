package pool

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"
	"testing/iotest"
)

// FuzzEvents feeds arbitrary bytes to the SSE parser whole and one byte at
// a time (as a slow network delivers them): it must never panic, both must
// give the same events and the same end, a clean end needs the [DONE]
// event, and no event is [DONE] itself. Seeds are real streams' shapes
// (OpenAI, OpenRouter comments, SGLang, CRLF, multi-line data).
func FuzzEvents(f *testing.F) {
	for _, s := range []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\ndata: [DONE]\n\n",
		": OPENROUTER PROCESSING\n\ndata: {\"a\":1}\n\ndata: [DONE]\n\n",
		"data: {\"text\":\"a\",\"meta_info\":{\"completion_tokens\":1}}\r\n\r\ndata: [DONE]\r\n\r\n",
		"event: message\ndata: line one\ndata: line two\nid: 3\n\ndata: [DONE]\n",
		"data: {\"a\"",
		"data:[DONE]",
		"\n\n\ndata: x\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		whole, errWhole := collect(bytes.NewReader(in))
		slow, errSlow := collect(iotest.OneByteReader(bytes.NewReader(in)))
		if !slices.Equal(whole, slow) || !errors.Is(errSlow, errWhole) {
			t.Fatalf("read whole: %q, %v; one byte at a time: %q, %v", whole, errWhole, slow, errSlow)
		}
		if errWhole == nil && !bytes.Contains(in, []byte("[DONE]")) {
			t.Fatalf("a clean end without [DONE]: %q", in)
		}
		if slices.Contains(whole, "[DONE]") {
			t.Fatal("[DONE] was passed on as an event")
		}
	})
}

func collect(r io.Reader) ([]string, error) {
	var got []string
	err := Events(r, func(d []byte) error {
		got = append(got, string(d))
		return nil
	})
	return got, err
}
