package generate

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/eaglet-dev/eaglet/specs"
	"github.com/eaglet-dev/eaglet/stages/serving/endpoint"
)

// inheritTemplate makes the generate stage render as the tokenize stage
// it reads from does. Its chat_template_kwargs and date default to that
// stage's, so one setting reaches both eaglet's renders and the server's;
// kwargs set on both (or on the endpoint) that differ are an error: the
// server, or the stage's own renders of later turns, would render another
// prompt than the one tokenize counted and encoded.
func inheritTemplate(spec *specs.Spec, st *specs.Stage, opts *Options, e *endpoint.Endpoint) error {
	tok := spec.Upstream(st, "tokenize")
	if tok == nil {
		return nil
	}
	var theirs struct {
		Kwargs map[string]any `yaml:"chat_template_kwargs"`
		Date   string         `yaml:"date"`
	}
	// The tokenize stage reports its own options' errors (here every key
	// but these is unknown).
	_ = spec.Decode(tok.With, &theirs)
	if opts.Date == "" {
		opts.Date = theirs.Date
	}
	sent := opts.ChatTemplateKwargs
	if !e.TakesIDs {
		sent = maps.Clone(e.Kwargs)
		if sent == nil {
			sent = map[string]any{}
		}
		maps.Copy(sent, opts.ChatTemplateKwargs)
	}
	if len(sent) == 0 {
		opts.ChatTemplateKwargs = theirs.Kwargs
		return nil
	}
	if e.TakesIDs && opts.Tokenizer == "" {
		return nil // nothing rendered with them: the ids come from tokenize
	}
	if a, b := canonical(theirs.Kwargs), canonical(sent); a != b {
		return &specs.Error{Pos: st.OptionPos("chat_template_kwargs"), Msg: fmt.Sprintf("stage %s: chat_template_kwargs %s differ from stage %s's %s: the prompt generate sends would not be the one tokenize encoded; give both the same, or leave them to generate's default, tokenize's", st.Name, b, tok.Name, a)}
	}
	return nil
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
