// Package all registers every built-in stage kind; import it for its side
// effect. A new kind is one package under stages/ plus one line here.
package all

import (
	_ "github.com/eaglet-dev/eaglet/stages/cap"      // cap
	_ "github.com/eaglet-dev/eaglet/stages/dedupe"   // dedupe
	_ "github.com/eaglet-dev/eaglet/stages/evaluate" // evaluate
	_ "github.com/eaglet-dev/eaglet/stages/filter"   // filter
	_ "github.com/eaglet-dev/eaglet/stages/generate" // generate
	_ "github.com/eaglet-dev/eaglet/stages/handoff"  // handoff
	_ "github.com/eaglet-dev/eaglet/stages/load"     // load
	_ "github.com/eaglet-dev/eaglet/stages/merge"    // merge
	_ "github.com/eaglet-dev/eaglet/stages/tokenize" // tokenize
)
