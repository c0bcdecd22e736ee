package specs_test

import (
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/specs"
)

// TestParse_AliasBomb: a "billion laughs" spec is refused once, at the
// alias that blows up, in time linear in the file; ordinary aliases pass.
func TestParse_AliasBomb(t *testing.T) {
	bomb := "version: 1\nname: b\nx:\n  a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
	prev := "a"
	for _, name := range []string{"b", "c", "d", "e", "f", "g", "h", "i", "j"} {
		bomb += "  " + name + ": &" + name + " [" + strings.TrimSuffix(strings.Repeat("*"+prev+", ", 10), ", ") + "]\n"
		prev = name
	}
	_, err := specs.Parse("spec.yaml", []byte(bomb), func(string) (string, bool) { return "", false })
	if err == nil || !strings.Contains(err.Error(), "(an alias bomb?)") || strings.Contains(err.Error(), "problems") {
		t.Errorf("err = %v; want one alias bomb error", err)
	}
	ok := "version: 1\nname: b\nvars: {n: &n 5}\ndatasets: {}\nstages:\n  - &s {name: a, uses: load, foreach: datasets}\n"
	if _, err := specs.Parse("spec.yaml", []byte(ok), func(string) (string, bool) { return "", false }); err != nil && strings.Contains(err.Error(), "alias") {
		t.Errorf("ordinary aliases refused: %v", err)
	}
}
