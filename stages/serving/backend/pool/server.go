package pool

import "github.com/eaglet-dev/eaglet/internal/conv"

// Server is what every client shares about the server it talks to: where
// requests go, what they carry, and how the answers it records look.
type Server struct {
	// URLs are the server's base URLs, balanced by outstanding requests.
	URLs []string
	// APIKey is sent as a bearer token when set; it never appears in errors.
	APIKey string
	// Headers are sent with every request (HTTP-Referer, X-Title, ...).
	Headers map[string]string
	// Model is the model name sent, where the API takes one, and recorded.
	Model string
	// StopTokenIDs are end-of-turn ids trimmed from recorded token ids.
	StopTokenIDs []int
	// ThinkStart and ThinkEnd delimit inline reasoning (<think>, </think>).
	ThinkStart, ThinkEnd string
	// Pool, when set, is used instead of one built from URLs (the engine's
	// logs its URLs going out of service; tests shorten the rests).
	Pool *Pool
}

// Connect returns the pool requests go through and the auth they carry,
// and fills in the default reasoning markers.
func (s *Server) Connect() (*Pool, Auth, error) {
	if s.ThinkStart == "" {
		s.ThinkStart, s.ThinkEnd = conv.ThinkStart, conv.ThinkEnd
	}
	p := s.Pool
	if p == nil {
		var err error
		if p, err = New(Config{URLs: s.URLs}); err != nil {
			return nil, Auth{}, err
		}
	}
	return p, Auth{APIKey: s.APIKey, Headers: s.Headers}, nil
}
