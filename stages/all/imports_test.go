package all

import (
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/eaglet-dev/eaglet/"

// libraries are the folders under stages/ that are not kinds: this one,
// and serving, the machinery that talks to inference servers (endpoints,
// backends, launched servers), which generate and evaluate share.
var libraries = map[string]bool{"all": true, "serving": true}

// TestKindsImportNoOtherKind keeps kinds independent: a library two kinds
// need belongs under internal/ (or stages/serving, when it speaks package
// stages), not inside one of them; no kind reaches into the engine or the
// store (tests may: they run a kind through the engine and read what it
// stored); and serving imports no kind.
func TestKindsImportNoOtherKind(t *testing.T) {
	dirs, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, d := range dirs {
		if d.IsDir() && !libraries[d.Name()] {
			kinds[d.Name()] = true
		}
	}
	if _, err := os.Stat(filepath.Join("..", "serving")); err != nil {
		t.Fatal(err)
	}
	if len(kinds) < 6 {
		t.Fatalf("found %d kind folders under stages/, want at least 6", len(kinds))
	}
	for _, kind := range append(slices.Sorted(maps.Keys(kinds)), "serving") {
		err := filepath.WalkDir(filepath.Join("..", kind), func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
				return err
			}
			f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
			if err != nil {
				return err
			}
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if (p == module+"state" || p == module+"engine") && !strings.HasSuffix(path, "_test.go") {
					// The contract is in stages: a kind reports through
					// stages.Report, and the engine keeps what it says.
					t.Errorf("%s imports %s; a kind speaks to the engine only through package stages", path, p)
				}
				rest, ok := strings.CutPrefix(p, module+"stages/")
				if !ok {
					continue
				}
				if other, _, _ := strings.Cut(rest, "/"); other != kind && kinds[other] {
					t.Errorf("%s imports kind %s (%s); move what it needs under internal/", path, other, p)
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// TestContractImportsNoStore keeps package stages, the contract between
// the engine and the kinds, free of the store: a kind checkpoints its own
// work through stages.Checkpoints, never through state's types.
func TestContractImportsNoStore(t *testing.T) {
	files, err := filepath.Glob("../*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files in package stages: %v", err)
	}
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == module+"state" || p == module+"engine" {
				t.Errorf("%s imports %s; the contract names no store or engine type", path, p)
			}
		}
	}
}
