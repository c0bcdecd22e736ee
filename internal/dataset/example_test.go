package dataset_test

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/eaglet-dev/eaglet/internal/dataset"
)

func ExampleOpen() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "chat.json")
	os.WriteFile(path, []byte(`[
  {"conversations": [{"from": "human", "value": "Hi"}, {"from": "gpt", "value": "<think>greet back</think>Hello!"}]},
  {"conversations": [{"from": "gpt", "value": "no question"}]}
]`), 0o644)

	r, err := dataset.Open(path, dataset.Options{OnError: dataset.OnErrorSkip})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close()
	for {
		rec, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			fmt.Println(err)
			return
		}
		for _, m := range rec.Messages {
			fmt.Printf("%s: %q (reasoning %q)\n", m.Role, m.Content, m.Reasoning)
		}
		fmt.Println("line", rec.Source.Line)
	}
	fmt.Println(r.Container(), r.Detected(), r.Skipped())
	// Output:
	// user: "Hi" (reasoning "")
	// assistant: "Hello!" (reasoning "greet back")
	// line 2
	// json array sharegpt map[no user message:1]
}
