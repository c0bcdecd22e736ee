package pool

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestPost_NotesTheURLServed: under WithServed, Post says which URL a
// request went to, without the user information or query that may carry
// a credential, since the caller stores and shows it.
func TestPost_NotesTheURLServed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "{}") }))
	defer srv.Close()
	for _, base := range []string{srv.URL + "/v1", "http://user:secret@" + srv.Listener.Addr().String() + "/v1?api-key=secret"} {
		p, err := New(Config{URLs: []string{base}})
		if err != nil {
			t.Fatal(err)
		}
		var served string
		if err := p.Post(WithServed(context.Background(), &served), "/chat/completions", []byte(`{}`), Auth{},
			func(r io.Reader) error { return nil }); err != nil {
			t.Fatal(err)
		}
		if want := srv.URL + "/v1"; served != want {
			t.Errorf("%s: served %q, want %q", base, served, want)
		}
	}
}
