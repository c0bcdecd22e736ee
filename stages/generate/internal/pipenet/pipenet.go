// Package pipenet serves HTTP to a test over in-memory connections
// (net.Pipe), so that server and client can run in a synctest bubble: a
// goroutine waiting on a pipe is durably blocked, one waiting on a socket
// is not, and the bubble's clock moves only once every goroutine in it is.
package pipenet

import (
	"context"
	"net"
	"net/http"
	"sync"
	"testing"
)

// Serve serves h until the test ends and returns a client whose requests
// all go to it, whatever host their URLs name. Called in a bubble, server
// and client belong to it.
func Serve(t testing.TB, h http.Handler) *http.Client {
	t.Helper()
	ln := &listener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	tr := &http.Transport{DialContext: ln.dial}
	t.Cleanup(func() {
		tr.CloseIdleConnections()
		// A bubble must end with no goroutine left in it: this waits for
		// the handlers still running, on the bubble's clock.
		srv.Shutdown(context.Background())
	})
	return &http.Client{Transport: tr}
}

// listener hands out the server ends of the connections dial makes.
type listener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func (l *listener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *listener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *listener) Addr() net.Addr { return addr{} }

func (l *listener) dial(ctx context.Context, _, _ string) (net.Conn, error) {
	client, server := net.Pipe()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		return nil, net.ErrClosed
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

type addr struct{}

func (addr) Network() string { return "pipe" }
func (addr) String() string  { return "pipe" }
