package engine

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sort"
	"strings"
)

// Change is one setting that differs between a stored run's configuration
// and today's: "max_samples 7000 -> 8000".
type Change struct {
	// Key is the setting's name.
	Key string
	// Old and New are its values as JSON ("(unset)" when absent); both are
	// empty when the setting is a hash that says only that it changed (a
	// kind's input file or model).
	Old, New string
}

// String is the change as plan shows it: "max_samples 7000 -> 8000".
func (c Change) String() string {
	if c.Old == "" && c.New == "" {
		return c.Key + " changed"
	}
	return fmt.Sprintf("%s %s -> %s", c.Key, c.Old, c.New)
}

// joinChanges shows changes one after another, or says the configuration
// changed when none can be named.
func joinChanges(cs []Change) string {
	if len(cs) == 0 {
		return "configuration changed"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.String()
	}
	return strings.Join(parts, ", ")
}

// opaque is the change of a kind's own fingerprint that names nothing.
var opaque = Change{Key: "input file or model"}

// changes lists the settings that differ between two fingerprint
// materials, in the order plan shows them; nil when they cannot be
// compared or nothing in them differs.
func changes(old, cur string) []Change {
	var a, b map[string]any
	if json.Unmarshal([]byte(old), &a) != nil || json.Unmarshal([]byte(cur), &b) != nil {
		return nil
	}
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	// What changed in a kind's own fingerprint stays together, sorted as
	// one among the other settings.
	var groups [][]Change
	for k := range keys {
		if reflect.DeepEqual(a[k], b[k]) {
			continue
		}
		if k == "external" {
			// A kind's own fingerprint, when it is a JSON object, says
			// what in it changed; a bare hash does not.
			x, _ := a[k].(string)
			y, _ := b[k].(string)
			if inner := changes(x, y); inner != nil {
				groups = append(groups, inner)
			} else {
				groups = append(groups, []Change{opaque})
			}
			continue
		}
		c := Change{Key: k, Old: show(a[k]), New: show(b[k])}
		if strings.Contains(c.New, "${") && !strings.Contains(c.Old, "${") {
			// Only a secret is kept as its ${VAR}; a store from before
			// that holds its value, which must not be printed.
			c.Old = clearSecret
		}
		groups = append(groups, []Change{c})
	}
	sort.Slice(groups, func(i, j int) bool { return joinChanges(groups[i]) < joinChanges(groups[j]) })
	var out []Change
	for _, g := range groups {
		out = append(out, g...)
	}
	return out
}

// clearSecret stands for an old setting that held a secret's value.
const clearSecret = "(a secret's value, stored in clear by an older eaglet)"

// show is a setting's value as JSON, as it was written.
func show(v any) string {
	if v == nil {
		return "(unset)"
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // show ">=" as written, not as \u003e=
	enc.Encode(v)
	return strings.TrimSpace(b.String())
}
