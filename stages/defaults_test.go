package stages_test

import (
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/stages"
	_ "github.com/eaglet-dev/eaglet/stages/all"
)

// TestDefaults_EveryKindListsWhatItRunsWith: every default a kind
// declares is listed by `eaglet kinds` and no option's doc restates a
// default beside it, so the listing and the behaviour have one source.
func TestDefaults_EveryKindListsWhatItRunsWith(t *testing.T) {
	found := 0
	for _, name := range stages.Names() {
		k, _ := stages.Lookup(name)
		for _, o := range k.Docs() {
			if o.Default != "" {
				found++
			}
			if strings.Contains(o.Doc, "default ") && !strings.Contains(o.Doc, "default: the") && !strings.Contains(o.Doc, "defaults to") {
				t.Errorf("%s.%s: doc %q states a default; declare it in a `default` tag", name, o.Name, o.Doc)
			}
		}
	}
	if found < 10 {
		t.Errorf("found %d declared defaults over all kinds, want at least 10", found)
	}
}
