package accept

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDrafterID: a drafter is its files' names and contents, wherever it
// lies and whether its files are links (a Hugging Face snapshot's are).
func TestDrafterID(t *testing.T) {
	files := map[string]string{"config.json": `{"draft_vocab_size": 32000}`, "model.safetensors": "weights", "sub/d2t.npy": "map"}
	id := func(dir string) string {
		t.Helper()
		s, err := DrafterID(dir)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, copied := t.TempDir(), t.TempDir()
	writeFiles(t, a, files)
	writeFiles(t, copied, files)
	linked := t.TempDir()
	for name := range files {
		os.MkdirAll(filepath.Dir(filepath.Join(linked, name)), 0o755)
		if err := os.Symlink(filepath.Join(a, name), filepath.Join(linked, name)); err != nil {
			t.Fatal(err)
		}
	}
	retrained, renamed := t.TempDir(), t.TempDir()
	writeFiles(t, retrained, map[string]string{"config.json": files["config.json"], "model.safetensors": "weights after another epoch", "sub/d2t.npy": "map"})
	writeFiles(t, renamed, map[string]string{"config.json": files["config.json"], "weights.safetensors": "weights", "sub/d2t.npy": "map"})

	if id(a) != id(copied) || id(a) != id(linked) {
		t.Error("the same files elsewhere, or linked, are another drafter")
	}
	if id(a) == id(retrained) || id(a) == id(renamed) {
		t.Error("other weights, or a file renamed, are the same drafter")
	}
	if _, err := DrafterID(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no files") {
		t.Errorf("an empty directory: error %v", err)
	}
	if _, err := DrafterID(filepath.Join(a, "missing")); err == nil {
		t.Error("a missing directory is a drafter")
	}
}
