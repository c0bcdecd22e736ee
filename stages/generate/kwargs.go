package generate

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/eaglet-dev/eaglet/specs"
)

// checkKwargs refuses template kwargs that differ from those of the
// tokenize stage the generate stage reads from: the server (or the stage's
// own renders of later turns) would render another prompt than the one
// tokenize counted and encoded.
func checkKwargs(spec *specs.Spec, st *specs.Stage, opts *Options, e *endpoint) error {
	tok := upstreamOfKind(spec, st, "tokenize")
	if tok == nil {
		return nil
	}
	var theirs struct {
		Kwargs map[string]any `yaml:"chat_template_kwargs"`
	}
	// The tokenize stage reports its own options' errors (here every key
	// but this one is unknown).
	_ = spec.Decode(tok.With, &theirs)
	ours := opts.ChatTemplateKwargs
	if !e.takesIDs {
		ours = maps.Clone(e.kwargs)
		if ours == nil {
			ours = map[string]any{}
		}
		maps.Copy(ours, opts.ChatTemplateKwargs)
	} else if opts.Tokenizer == "" {
		return nil // nothing rendered here: the ids come from tokenize
	}
	a, b := canonical(theirs.Kwargs), canonical(ours)
	if a == b {
		return nil
	}
	pos := st.OptionPos("chat_template_kwargs")
	return &specs.Error{Pos: pos, Msg: fmt.Sprintf("stage %s: chat_template_kwargs %s differ from stage %s's %s: the prompt generate sends would not be the one tokenize encoded; give both the same (on generate or its endpoint's options)", st.Name, b, tok.Name, a)}
}

// canonical is kwargs as sorted JSON, "{}" when there are none.
func canonical(kw map[string]any) string {
	if len(kw) == 0 {
		return "{}"
	}
	b, err := json.Marshal(kw)
	if err != nil {
		return fmt.Sprint(kw)
	}
	return string(b)
}

// upstreamOfKind finds the nearest stage of a kind among what st needs,
// directly or not.
func upstreamOfKind(spec *specs.Spec, st *specs.Stage, kind string) *specs.Stage {
	byName := map[string]*specs.Stage{}
	for _, s := range spec.Stages {
		byName[s.Name] = s
	}
	seen := map[string]bool{}
	queue := append([]string(nil), st.Needs...)
	for len(queue) > 0 {
		name := queue[0]
		queue = queue[1:]
		s := byName[name]
		if s == nil || seen[name] {
			continue
		}
		seen[name] = true
		if s.Uses == kind {
			return s
		}
		queue = append(queue, s.Needs...)
	}
	return nil
}
