package pool

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/eaglet-dev/eaglet/stages/serving/backend"
)

// StatusError classifies a non-2xx response by its status and body:
//
//   - 429, 503 and 402 in_flight_budget_exhausted: Retryable, honouring Retry-After
//   - 408, 409, other 5xx: Retryable
//   - 401, 402 (credits exhausted), 403 (key or budget), 404: Fatal, nothing will succeed
//   - 403 flagged by moderation, 400, 413, 422 and other 4xx: Permanent for this item
//
// The message is the server's, from whichever error shape it sent.
func StatusError(status int, h http.Header, body []byte) *backend.Error {
	msg := Message(body)
	e := &backend.Error{Status: status, Msg: msg, RetryAfter: RetryAfter(h)}
	lower := strings.ToLower(string(body))
	switch {
	case status == http.StatusTooManyRequests, status == http.StatusServiceUnavailable,
		status == http.StatusRequestTimeout, status == http.StatusConflict, status >= 500:
		e.Kind = backend.Retryable
	case status == http.StatusPaymentRequired && strings.Contains(lower, "in_flight_budget"):
		e.Kind = backend.Retryable
	case status == http.StatusForbidden && (strings.Contains(lower, "flagged") || strings.Contains(lower, "moderation")):
		e.Kind = backend.Permanent
	case status == http.StatusUnauthorized, status == http.StatusPaymentRequired,
		status == http.StatusForbidden, status == http.StatusNotFound:
		e.Kind = backend.Fatal
	default:
		e.Kind = backend.Permanent
	}
	return e
}

// Message extracts the error message from the shapes servers use:
// {"error":{"message":...}} (OpenAI, vLLM, SGLang /generate, OpenRouter),
// {"object":"error","message":...} (SGLang and older vLLM OpenAI routes),
// {"error":"..."}, {"detail":...} (FastAPI validation), or plain text.
func Message(body []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var nested struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &nested) == nil && nested.Message != "":
			return nested.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case v.Message != "":
			return v.Message
		case json.Unmarshal(v.Detail, &s) == nil && s != "":
			return s
		case len(v.Detail) > 0:
			return clip(string(v.Detail))
		}
	}
	return clip(strings.TrimSpace(string(body)))
}

func clip(s string) string {
	const n = 500
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// RetryAfter parses a Retry-After header in seconds or as an HTTP date.
func RetryAfter(h http.Header) time.Duration {
	v := h.Get("Retry-After")
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(0, time.Until(t))
	}
	return 0
}

// Retryable wraps a transport failure (connection refused or reset,
// timeout, truncated or invalid body) as a retryable error.
func Retryable(format string, err error) *backend.Error {
	return &backend.Error{Kind: backend.Retryable, Msg: format + ": " + err.Error()}
}
