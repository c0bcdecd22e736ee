package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestUsage_ListsFlags: a command's usage line names every flag it takes,
// so `eaglet reset -h` shows --yes without reading on. sim-server has too
// many to list and says [flags].
func TestUsage_ListsFlags(t *testing.T) {
	flagLine := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`)
	for name := range commands {
		code, _, errOut := eaglet(name, "-h")
		if code != exitOK {
			t.Errorf("eaglet %s -h: exit %d", name, code)
			continue
		}
		usage, _, _ := strings.Cut(errOut, "\n")
		if !strings.HasPrefix(usage, "usage: eaglet "+name) {
			t.Errorf("eaglet %s -h starts %q; want a usage line", name, usage)
			continue
		}
		if name == "sim-server" {
			continue
		}
		for _, m := range flagLine.FindAllStringSubmatch(errOut, -1) {
			if !strings.Contains(usage, "--"+m[1]) {
				t.Errorf("eaglet %s: usage line %q omits --%s", name, usage, m[1])
			}
		}
	}
}

// TestUsage_ShowsExamples: every command's -h ends with examples, as
// litestream's help does, each a command line of that command whose flags
// are flags it takes.
func TestUsage_ShowsExamples(t *testing.T) {
	flagLine := regexp.MustCompile(`(?m)^  -([a-z0-9-]+)`)
	flagUse := regexp.MustCompile(`(?:^| )--([a-z0-9-]+)`)
	for name := range commands {
		_, _, errOut := eaglet(name, "-h")
		_, examples, ok := strings.Cut(errOut, "\nexamples:\n")
		if !ok {
			t.Errorf("eaglet %s -h shows no examples:\n%s", name, errOut)
			continue
		}
		takes := map[string]bool{}
		for _, m := range flagLine.FindAllStringSubmatch(errOut, -1) {
			takes[m[1]] = true
		}
		lines := 0
		for _, line := range strings.Split(examples, "\n") {
			cmd, ok := strings.CutPrefix(line, "  $ ")
			if !ok {
				continue
			}
			lines++
			if !strings.Contains(cmd, "eaglet "+name) {
				t.Errorf("eaglet %s -h: example %q does not run eaglet %s", name, cmd, name)
			}
			for _, m := range flagUse.FindAllStringSubmatch(cmd, -1) {
				if !takes[m[1]] {
					t.Errorf("eaglet %s -h: example %q uses --%s, which %s does not take", name, cmd, m[1], name)
				}
			}
		}
		if lines == 0 {
			t.Errorf("eaglet %s -h: no example command lines (\"  $ eaglet ...\"):\n%s", name, examples)
		}
	}
}
