package endpoint

import (
	"testing"

	"github.com/eaglet-dev/eaglet/stages/serving/backend"
)

func TestRetryKind(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&backend.Error{Status: 503, Msg: "overloaded"}, "http 503"},
		{&backend.Error{Kind: backend.Retryable, Msg: "post http://127.0.0.1:30002/v1/chat/completions: EOF"}, "network: EOF"},
		{&backend.Error{Kind: backend.Retryable, Msg: "post http://h:1/v1/chat/completions: dial tcp 127.0.0.1:1: connect: connection refused"}, "network: connection refused"},
		// Garbage bodies broken at different offsets are one kind.
		{&backend.Error{Kind: backend.Retryable, Msg: `read response of http://h:1/v1/chat/completions: jsontext: unexpected EOF within "/choices" after offset 812`}, `bad response: unexpected EOF within "/choices"`},
		{&backend.Error{Kind: backend.Retryable, Msg: `read response of http://h:2/v1/chat/completions: jsontext: unexpected EOF within "/choices" after offset 97`}, `bad response: unexpected EOF within "/choices"`},
		{&backend.Error{Kind: backend.Retryable, Msg: "read response of http://h:1/v1/chat/completions: jsontext: invalid character '<' at start of value"}, "bad response: invalid character '<' at start of value"},
		{&backend.Error{Kind: backend.Retryable, Msg: "read response of http://h:1/v1/chat/completions: unexpected EOF"}, "network: unexpected EOF"},
		{&backend.Error{Kind: backend.Retryable, Msg: "nothing received for 30s"}, "nothing received for 30s"},
		{&backend.Error{Kind: backend.Retryable, Moved: true, Msg: "url hung: http://h:1/v1 out of service (no token in 10s while the others answered 3, nor to a one-token request in 10s)"}, "url hung"},
	}
	for _, tt := range tests {
		if got := retryKind(tt.err); got != tt.want {
			t.Errorf("retryKind(%q) = %q; want %q", tt.err, got, tt.want)
		}
	}
}
