// Package internal holds the libraries eaglet is built from; this test
// keeps them below the layers that use them.
package internal

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

// TestLibrariesImportNoLayerAbove keeps every package under internal/,
// tests included, from importing the stages, the engine or the commands:
// a library that needs one of their types declares the little it uses (as
// launch.Checkpoints does), so it can be read, tested and reused alone.
func TestLibrariesImportNoLayerAbove(t *testing.T) {
	files := 0
	err := filepath.WalkDir(".", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") {
			return err
		}
		files++
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			for _, above := range []string{"stages", "engine", "cmd"} {
				if p == module+above || strings.HasPrefix(p, module+above+"/") {
					pos := fset.Position(imp.Pos())
					t.Errorf("internal/%s imports %s; internal/ is below %s/: declare what it needs here", pos, p, above)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 50 {
		t.Fatalf("read %d Go files under internal/, want the whole tree", files)
	}
}
