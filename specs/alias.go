package specs

import "gopkg.in/yaml.v3"

// maxExpanded is how many values a spec may hold once its aliases are
// expanded: far above any real spec, far below what exhausts memory.
const maxExpanded = 100_000

// aliasBomb returns the first alias whose expansion takes the document past
// maxExpanded values ("billion laughs"), and that expansion's size; nil
// when the document is within bounds. Sizes are memoized per node, so the
// check is linear in the document as written.
func aliasBomb(doc *yaml.Node) (*yaml.Node, int) {
	memo := map[*yaml.Node]int{}
	var culprit *yaml.Node
	var size func(n *yaml.Node) int
	size = func(n *yaml.Node) int {
		if s, ok := memo[n]; ok {
			return s
		}
		memo[n] = 1 // a cycle counts once; yaml.v3 refuses cycles anyway
		s := 1
		if n.Kind == yaml.AliasNode && n.Alias != nil {
			s = size(n.Alias)
			if s > maxExpanded && culprit == nil {
				culprit = n
			}
		}
		for _, c := range n.Content {
			s += size(c)
			if s > maxExpanded {
				s = maxExpanded + 1 // enough to know; avoids overflow
				if culprit == nil && c.Kind == yaml.AliasNode {
					culprit = c
				}
			}
		}
		memo[n] = s
		return s
	}
	if total := size(doc); total > maxExpanded {
		if culprit == nil {
			culprit = doc
		}
		return culprit, total
	}
	return nil, 0
}
