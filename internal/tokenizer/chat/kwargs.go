package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
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
