// Package pipenet serves HTTP to a test over in-memory connections
// (net.Pipe), so that server and client can run in a synctest bubble: a
// goroutine waiting on a pipe is durably blocked, one waiting on a socket
// is not, and the bubble's clock moves only once every goroutine in it is.
package pipenet

import (
	"context"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"testing"
)

// Serve serves h until the test ends and returns a client whose requests
// all go to it, whatever host their URLs name. Called in a bubble, server
// and client belong to it.
func Serve(t testing.TB, h http.Handler) *http.Client {
	t.Helper()
	ln := listen(t, h)
	return client(t, func(context.Context, string) (*listener, error) { return ln, nil })
}

// ServeHosts serves each handler of hs to the requests whose URLs name its
// host, as Serve does, until the test ends; a connection to any other host
// is refused, as by a port nothing listens on.
func ServeHosts(t testing.TB, hs map[string]http.Handler) *http.Client {
	t.Helper()
	lns := map[string]*listener{}
	for host, h := range hs {
		lns[host] = listen(t, h)
	}
	return client(t, func(_ context.Context, addr string) (*listener, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			host = addr
		}
		if ln := lns[host]; ln != nil {
			return ln, nil
		}
		return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	})
}

// listen serves h over the connections its listener is handed.
func listen(t testing.TB, h http.Handler) *listener {
	ln := &listener{conns: make(chan net.Conn), done: make(chan struct{})}
	srv := &http.Server{Handler: h}
	go srv.Serve(ln)
	// A bubble must end with no goroutine left in it: this waits for the
	// handlers still running, on the bubble's clock.
	t.Cleanup(func() { srv.Shutdown(context.Background()) })
	return ln
}

// client dials the listener route picks for an address.
func client(t testing.TB, route func(ctx context.Context, addr string) (*listener, error)) *http.Client {
	tr := &http.Transport{DialContext: func(ctx context.Context, _, addr string) (net.Conn, error) {
		ln, err := route(ctx, addr)
		if err != nil {
			return nil, err
		}
		return ln.dial(ctx)
	}}
	// Registered after the servers' shutdowns, so it runs before them.
	t.Cleanup(tr.CloseIdleConnections)
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

func (l *listener) dial(ctx context.Context) (net.Conn, error) {
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
