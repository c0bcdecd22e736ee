package main

import (
	"os"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/stages"
)

// TestKinds_READMETableIsGenerated: the README's kind table is exactly what
// `eaglet kinds --markdown` prints, so it is made from the same declarations
// as the spec checks and cannot drift from them.
func TestKinds_READMETableIsGenerated(t *testing.T) {
	code, table, errOut := eaglet("kinds", "--markdown")
	if code != exitOK {
		t.Fatalf("eaglet kinds --markdown: exit %d\n%s", code, errOut)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), table) {
		t.Errorf("README.md does not hold the output of `eaglet kinds --markdown`; replace its kind table with:\n%s", table)
	}
}

// TestKinds_EveryOptionListed: the listing names every kind and every
// option with its type and doc; an option without a doc tag fails here.
func TestKinds_EveryOptionListed(t *testing.T) {
	code, out, errOut := eaglet("kinds")
	if code != exitOK {
		t.Fatalf("eaglet kinds: exit %d\n%s", code, errOut)
	}
	for _, name := range stages.Names() {
		k, _ := stages.Lookup(name)
		if !strings.Contains(out, k.Name+": "+k.Summary+"\n") {
			t.Errorf("kind %s is not listed with its summary", name)
		}
		for _, o := range k.Docs() {
			if o.Doc == "" {
				t.Errorf("kind %s: option %s has no doc tag; say what it does and its default", name, o.Name)
				continue
			}
			found := false
			for _, line := range strings.Split(out, "\n") {
				if f := strings.Fields(line); len(f) > 2 && f[0] == o.Name && strings.HasSuffix(line, o.Doc) {
					found = true
				}
			}
			if !found {
				t.Errorf("kind %s: option %s (%s) is not listed with its doc", name, o.Name, o.Doc)
			}
		}
	}
}

func TestKinds_Usage(t *testing.T) {
	for _, args := range [][]string{{"kinds", "extra"}, {"kinds", "--nope"}} {
		if code, _, _ := eaglet(args...); code != exitUsage {
			t.Errorf("eaglet %v: exit %d; want %d", args, code, exitUsage)
		}
	}
}
