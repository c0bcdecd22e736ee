package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/ardanlabs/jinja"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

// jsonValue decodes JSON into a template value the way Python's json.loads
// would hand it to Jinja: objects keep their key order (tojson prints them
// back in that order) and a number is an int unless written as a float, so
// 1.0 stays 1.0 and 1 stays 1.
func jsonValue(data []byte) (jinja.Value, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := decodeValue(dec)
	if err != nil {
		return jinja.Undefined(), err
	}
	if _, err := dec.Token(); err == nil {
		return jinja.Undefined(), fmt.Errorf("trailing data after JSON value")
	}
	return v, nil
}

func decodeValue(dec *json.Decoder) (jinja.Value, error) {
	tok, err := dec.Token()
	if err != nil {
		return jinja.Undefined(), err
	}
	switch t := tok.(type) {
	case nil:
		return jinja.None(), nil
	case bool:
		return jinja.NewBool(t), nil
	case string:
		return jinja.NewString(t), nil
	case json.Number:
		s := t.String()
		if !strings.ContainsAny(s, ".eE") {
			if n, err := strconv.ParseInt(s, 10, 64); err == nil {
				return jinja.NewInt(n), nil
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return jinja.Undefined(), err
		}
		return jinja.NewFloat(f), nil
	case json.Delim:
		switch t {
		case '[':
			var items []jinja.Value
			for dec.More() {
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				items = append(items, v)
			}
			_, err := dec.Token()
			return jinja.NewList(items), err
		case '{':
			d := jinja.NewDict()
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return jinja.Undefined(), err
				}
				v, err := decodeValue(dec)
				if err != nil {
					return jinja.Undefined(), err
				}
				d.AsDict().Set(k.(string), v)
			}
			_, err := dec.Token()
			return d, err
		}
	}
	return jinja.Undefined(), fmt.Errorf("unexpected JSON token %v", tok)
}

// dict builds a template dict from key/value pairs, in order.
func dict(kv ...any) jinja.Value {
	d := jinja.NewDict()
	for i := 0; i+1 < len(kv); i += 2 {
		d.AsDict().Set(kv[i].(string), kv[i+1].(jinja.Value))
	}
	return d
}

// form is what a template expects of content and tool-call arguments.
type form struct {
	// partsList: the template iterates content, so text parts reach it as
	// a list (Gemma 3); otherwise they are joined with newlines, as vLLM
	// does for string-content templates.
	partsList bool
	// argsText: the template concatenates arguments as a string
	// (DeepSeek-V3); otherwise they are an object, as transformers
	// documents and servers pass them.
	argsText bool
	// argsString: the template prints arguments given as a string as
	// they are (Qwen3's `arguments is string`), so an answer's calls
	// reach it as the server's text (messageValue).
	argsString bool
	// none: the template tests content against none (DeepSeek-V3 renders
	// tool calls only then), so null content is None; other templates get
	// "", as vLLM gives them, since they would fail on None
	// ('</think>' in content).
	none bool
}

var (
	iteratesContent = regexp.MustCompile(`for\s+\w+\s+in\s+\w+(\.content|\[\s*['"]content['"]\s*\])`)
	testsNone       = regexp.MustCompile(`(\.|\[['"])content['"]?\]?\s+is\s+(not\s+)?none`)
	concatsArgs     = regexp.MustCompile(`\+\s*[\w.\[\]'"]*\barguments\b['"]?\]?\s*[+}]|\barguments\b['"]?\]?\s*\+`)
	testsArgsString = regexp.MustCompile(`\barguments\b['"]?\]?\s+is\s+string\b`)
)

func formOf(src string) form {
	return form{partsList: iteratesContent.MatchString(src), argsText: concatsArgs.MatchString(src),
		argsString: testsArgsString.MatchString(src), none: testsNone.MatchString(src)}
}

// contentValue is a message's content as the template expects it: None
// when the source gave null and the template tests for it, a list of text
// parts or a string.
func contentValue(m conv.Message, f form) jinja.Value {
	switch {
	case m.NullContent && m.Content == "" && f.none:
		return jinja.None()
	case len(m.Parts) > 0 && f.partsList:
		parts := make([]jinja.Value, len(m.Parts))
		for i, p := range m.Parts {
			parts[i] = dict("type", jinja.NewString("text"), "text", jinja.NewString(p))
		}
		return jinja.NewList(parts)
	case len(m.Parts) > 0:
		return jinja.NewString(strings.Join(m.Parts, "\n"))
	}
	return jinja.NewString(m.Content)
}

// messageValue is a message as Hugging Face chat templates expect it:
// reasoning both as reasoning_content (Qwen3, DeepSeek-R1, Kimi) and
// thinking (gpt-oss), tool calls in the OpenAI shape with arguments as an
// object, or as text for templates that concatenate them. An answer
// (RenderAnswer's) is the server's, and the server's arguments text is
// the nearest thing to what the model wrote: templates that print a
// string argument as it is (argsString) get that text too, as
// transformers renders the row handoff writes; the others the object.
func messageValue(m conv.Message, f form, answer bool) (jinja.Value, error) {
	if answer && f.argsString {
		f.argsText = true
	}
	v := dict("role", jinja.NewString(m.Role), "content", contentValue(m, f))
	d := v.AsDict()
	if m.Reasoning != "" {
		d.Set("reasoning_content", jinja.NewString(m.Reasoning))
		d.Set("thinking", jinja.NewString(m.Reasoning))
	}
	if len(m.ToolCalls) > 0 {
		calls := make([]jinja.Value, 0, len(m.ToolCalls))
		for _, c := range m.ToolCalls {
			args := jinja.NewDict()
			switch {
			case f.argsText && c.ArgumentsText != "":
				args = jinja.NewString(c.ArgumentsText)
			case f.argsText:
				args = jinja.NewString(strings.TrimSpace(string(c.Arguments)))
			case len(bytes.TrimSpace(c.Arguments)) > 0:
				var err error
				if args, err = jsonValue(c.Arguments); err != nil {
					return jinja.Undefined(), fmt.Errorf("tool call %s arguments: %w", c.Name, err)
				}
			}
			call := jinja.NewDict()
			if c.ID != "" {
				call.AsDict().Set("id", jinja.NewString(c.ID))
			}
			call.AsDict().Set("type", jinja.NewString("function"))
			call.AsDict().Set("function", dict("name", jinja.NewString(c.Name), "arguments", args))
			calls = append(calls, call)
		}
		d.Set("tool_calls", jinja.NewList(calls))
	}
	if m.ToolCallID != "" {
		d.Set("tool_call_id", jinja.NewString(m.ToolCallID))
	}
	if m.Name != "" {
		d.Set("name", jinja.NewString(m.Name))
	}
	return v, nil
}

// toolValue is a tool definition in the OpenAI shape templates iterate.
func toolValue(t conv.ToolDef) (jinja.Value, error) {
	fn := dict("name", jinja.NewString(t.Name))
	if t.Description != "" {
		fn.AsDict().Set("description", jinja.NewString(t.Description))
	}
	if len(bytes.TrimSpace(t.Parameters)) > 0 {
		p, err := jsonValue(t.Parameters)
		if err != nil {
			return jinja.Undefined(), fmt.Errorf("tool %s parameters: %w", t.Name, err)
		}
		fn.AsDict().Set("parameters", p)
	}
	return dict("type", jinja.NewString("function"), "function", fn), nil
}
