package specs

import (
	"strconv"

	"gopkg.in/yaml.v3"
)

// OptionPos returns where the option at path (a key of the stage's `with:`,
// then keys of nested mappings or indexes of lists, "0" for the first) has its value, so that a stage's check can
// point at the value it rejects rather than at the stage. It is the stage's
// own position when the option is not written (a default was used).
func (st *Stage) OptionPos(path ...string) Pos {
	_, v := st.option(path)
	return st.nodePos(v)
}

// OptionKeyPos is OptionPos for the option's key, for errors about the key
// itself (a weight naming a dataset that does not exist).
func (st *Stage) OptionKeyPos(path ...string) Pos {
	k, _ := st.option(path)
	return st.nodePos(k)
}

// Written reports whether the spec sets the option at path (as in
// OptionPos) to a value, so that a check can tell a zero written, which
// the stage runs with, from a key left out, which takes the default. A
// null is no value.
func (st *Stage) Written(path ...string) bool {
	_, v := st.option(path)
	return v != nil && v.Tag != "!!null"
}

// KeyPos returns where the stage's own setting key (foreach, needs, ...)
// has its value, so that a kind's check can point at a setting it rejects.
// It is the stage's position when the key is not written.
func (st *Stage) KeyPos(key string) Pos {
	_, v := mapEntry(st.node, key)
	return st.nodePos(v)
}

func (st *Stage) option(path []string) (key, val *yaml.Node) {
	val = st.With
	for _, name := range path {
		if i, err := strconv.Atoi(name); err == nil && val != nil && val.Kind == yaml.SequenceNode {
			if i < 0 || i >= len(val.Content) {
				return nil, nil
			}
			key, val = nil, val.Content[i]
			if val.Kind == yaml.AliasNode {
				val = val.Alias
			}
			continue
		}
		if key, val = mapEntry(val, name); val == nil {
			return nil, nil
		}
	}
	return key, val
}

func (st *Stage) nodePos(n *yaml.Node) Pos {
	if n == nil {
		return st.Pos
	}
	return Pos{File: st.Pos.File, Line: n.Line, Col: n.Column}
}

// mapEntry returns the key and value nodes of key in mapping m, following
// aliases as the decoder does; nil when m is not a mapping or lacks key.
// The first of duplicate keys wins, as it does when decoding.
func mapEntry(m *yaml.Node, key string) (k, v *yaml.Node) {
	if m != nil && m.Kind == yaml.AliasNode {
		m = m.Alias
	}
	if m == nil || m.Kind != yaml.MappingNode {
		return nil, nil
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			v = m.Content[i+1]
			if v.Kind == yaml.AliasNode {
				v = v.Alias
			}
			return m.Content[i], v
		}
	}
	return nil, nil
}

// valueNode returns the value of key in mapping m, or m itself when there is
// none, for errors that fall back to pointing at the whole mapping.
func valueNode(m *yaml.Node, key string) *yaml.Node {
	if _, v := mapEntry(m, key); v != nil {
		return v
	}
	return m
}
