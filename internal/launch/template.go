package launch

import "github.com/eaglet-dev/eaglet/internal/proc"

// Placeholders are the names an argv item, an env value or the outputs
// glob may use in braces: the shard's file, its index from 0, the number of
// shards, the output directory, the manifest and the shard's version.
var Placeholders = []string{"shard", "index", "count", "out", "manifest", "version"}

// expand replaces each {name} in s by vals[name] (proc.Expand).
func expand(s string, vals map[string]string) (string, error) {
	return proc.Expand(s, vals, Placeholders)
}
