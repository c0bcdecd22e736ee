package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/eaglet-dev/eaglet/internal/tokenizer"
)

// ParseKwargs reads template kwargs given as one JSON object, as
// --template-kwargs and vLLM's chat_template_kwargs take them.
func ParseKwargs(data []byte) (map[string]json.RawMessage, error) {
	var kw map[string]json.RawMessage
	if err := json.Unmarshal(data, &kw); err != nil || !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		return nil, fmt.Errorf("template kwargs %.60q: want a JSON object such as {\"enable_thinking\": false}", data)
	}
	return kw, nil
}

// KwargsOf converts kwargs decoded from YAML or JSON into WithKwargs' form.
func KwargsOf(m map[string]any) (map[string]json.RawMessage, error) {
	kw := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		if slices.Contains(reserved, k) {
			return nil, fmt.Errorf("template kwarg %q: the template gets %s from the conversation", k, k)
		}
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("template kwarg %q: %w", k, err)
		}
		kw[k] = b
	}
	return kw, nil
}

// ParseDate reads a render date, YYYY-MM-DD, as midnight UTC: the clock
// strftime_now reads when renders must not depend on the day they run.
func ParseDate(s string) (time.Time, error) {
	d, err := time.Parse(time.DateOnly, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("date %q: want YYYY-MM-DD", s)
	}
	return d, nil
}

// Pinned compiles a template for a pipeline stage, whose renders must not
// depend on the day they run: date (YYYY-MM-DD) pins strftime_now, and a
// template that prints the date without one is an error naming today's
// (from today). src overrides the tokenizer's template when not empty;
// kwargs are apply_chat_template's keyword arguments.
func Pinned(tok *tokenizer.Tokenizer, src, date string, kwargs map[string]any, today func() time.Time) (*Template, error) {
	now := today
	if date != "" {
		d, err := ParseDate(date)
		if err != nil {
			return nil, err
		}
		now = func() time.Time { return d }
	}
	kw, err := KwargsOf(kwargs)
	if err != nil {
		return nil, err
	}
	opts := []Option{WithNow(now), WithKwargs(kw)}
	if src != "" {
		opts = append(opts, WithSource(src))
	}
	t, err := New(tok, opts...)
	if err != nil {
		return nil, err
	}
	if t.PrintsDate() && date == "" {
		return nil, fmt.Errorf("the chat template prints today's date (strftime_now): set `date: %s` (or the day to keep) so every run renders the same prompt ids", today().Format(time.DateOnly))
	}
	return t, nil
}
