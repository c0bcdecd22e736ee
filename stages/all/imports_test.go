package all

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/eaglet-dev/eaglet/"

// TestKindsImportNoOtherKind keeps kinds independent: a library two kinds
// need belongs under internal/, not inside one of them.
func TestKindsImportNoOtherKind(t *testing.T) {
	dirs, err := os.ReadDir("..")
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]bool{}
	for _, d := range dirs {
		if d.IsDir() && d.Name() != "all" {
			kinds[d.Name()] = true
		}
	}
	if len(kinds) < 6 {
		t.Fatalf("found %d kind folders under stages/, want at least 6", len(kinds))
	}
	for kind := range kinds {
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
