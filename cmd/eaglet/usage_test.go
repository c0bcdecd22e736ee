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
