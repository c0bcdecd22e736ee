package specs

import "gopkg.in/yaml.v3"

// mergeKeys expands YAML merge keys (`<<: *server`, `<<: [*a, *b]`) into
// the mappings that hold them, as YAML's merge type says: the merged
// mappings' keys are added, each where it was written (for errors), and a
// key the mapping writes itself wins, as does an earlier merged mapping's
// over a later one's. The decoder then sees plain mappings. n is walked
// once the alias bomb check has bounded its expansion.
func mergeKeys(n *yaml.Node, errs *errorList) {
	if n == nil {
		return
	}
	if n.Kind == yaml.MappingNode {
		var kept []*yaml.Node
		var merged [][]*yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Tag != "!!merge" {
				kept = append(kept, k, v)
				continue
			}
			sources := []*yaml.Node{v}
			if v.Kind == yaml.SequenceNode {
				sources = v.Content
			}
			for _, src := range sources {
				if src.Kind == yaml.AliasNode {
					src = src.Alias
				}
				if src == nil || src.Kind != yaml.MappingNode {
					errs.node(k, "`<<` merges mappings: write an alias of one (<<: *server) or a list of them")
					continue
				}
				cp := copyNode(src)
				mergeKeys(cp, errs)
				merged = append(merged, cp.Content)
			}
		}
		has := map[string]bool{}
		for i := 0; i < len(kept); i += 2 {
			has[kept[i].Value] = true
		}
		for _, m := range merged {
			for i := 0; i+1 < len(m); i += 2 {
				if !has[m[i].Value] {
					has[m[i].Value] = true
					kept = append(kept, m[i], m[i+1])
				}
			}
		}
		n.Content = kept
	}
	for _, c := range n.Content {
		mergeKeys(c, errs)
	}
}

// copyNode copies n deeply, aliases expanded, so that a merged mapping
// gets values of its own: interpolation and decoding change nodes.
func copyNode(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return copyNode(n.Alias)
	}
	cp := *n
	cp.Anchor = ""
	cp.Content = make([]*yaml.Node, len(n.Content))
	for i, c := range n.Content {
		cp.Content[i] = copyNode(c)
	}
	return &cp
}
