package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages"
)

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

// TestKinds_EveryAPIOptionListed: every endpoint API is listed with each
// option of its `options:`, its doc and its default.
func TestKinds_EveryAPIOptionListed(t *testing.T) {
	code, out, errOut := eaglet("kinds")
	if code != exitOK {
		t.Fatalf("eaglet kinds: exit %d\n%s", code, errOut)
	}
	_, apis, ok := strings.Cut(out, "Endpoint APIs")
	if !ok {
		t.Fatalf("eaglet kinds lists no endpoint APIs:\n%s", out)
	}
	names := specs.APINames()
	if len(names) < 3 {
		t.Fatalf("%d APIs registered, want sim, sglang and openai at least", len(names))
	}
	for _, name := range names {
		a, _ := specs.LookupAPI(name)
		section, _, _ := strings.Cut(apis[strings.Index(apis, "api "+name+": "):], "\n\n")
		for _, o := range specs.OptionDocs(a.Options()) {
			if o.Doc == "" {
				t.Errorf("api %s: option %s has no doc tag", name, o.Name)
			}
			want := regexp.MustCompile(`(?m)^  ` + regexp.QuoteMeta(o.Name) + ` +\S+ +` + regexp.QuoteMeta(defaultText(o.Default)) + ` +` + regexp.QuoteMeta(o.Doc) + `$`)
			if !want.MatchString(section) {
				t.Errorf("api %s: option %s is not listed with its default (%q) and doc:\n%s", name, o.Name, o.Default, section)
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
