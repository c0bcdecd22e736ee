package main

import (
	"bytes"
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"html/template"
	"io"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/eaglet-dev/eaglet/engine"
	"github.com/eaglet-dev/eaglet/internal/report"
	"github.com/eaglet-dev/eaglet/state"
)

func init() {
	register(command{
		name:    "serve",
		summary: "serve the report live while a run goes on, refreshed from the store",
		run:     runServe,
		examples: []example{
			{"the report live on http://127.0.0.1:8080 while a run goes on", "eaglet serve specs/examples/quickstart.yaml"},
			{"on every interface, behind a token", "EAGLET_SERVE_TOKEN=$(openssl rand -hex 16) eaglet serve --addr 0.0.0.0:8080 --allow-remote specs/examples/quickstart.yaml"},
		},
	})
}

// serveTokenVar names the environment variable holding the token a
// non-loopback serve requires: an environment variable rather than a flag,
// so it never shows in `ps`, and its name makes eaglet scrub its value.
const serveTokenVar = "EAGLET_SERVE_TOKEN"

// pageTTL is how long a built page is served at least before the store is
// read anew, so a few viewers refreshing cost one build; a page that took
// long to build (a million answers: seconds) is kept five times as long,
// so watching a run takes at most a fifth of a core from it.
const pageTTL = 2 * time.Second

func runServe(ctx context.Context, env *cmdEnv, args []string) error {
	fs := newFlags(env, "serve", "[--addr HOST:PORT] [--allow-remote] [--allow-outside] SPEC",
		"Serves the report of SPEC's store live: the charts refresh every few seconds, read-only,\nnever blocking a run. It listens on loopback (use an SSH tunnel from elsewhere);\n--allow-remote binds another address and then requires the token in $"+serveTokenVar+"\n(at least 16 characters), given once as ?token=... in the URL.")
	addr := fs.String("addr", "127.0.0.1:8080", "the address to listen on")
	remote := fs.Bool("allow-remote", false, "allow a non-loopback --addr (needs $"+serveTokenVar+")")
	p, err := specFromArgs(env, fs, args)
	if err != nil {
		return err
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		return &exitError{code: exitUsage, err: fmt.Errorf("--addr %q: %w", *addr, err)}
	}
	token := ""
	if !isLoopback(host) {
		if !*remote {
			return &exitError{code: exitUsage, err: fmt.Errorf("--addr %s is not a loopback address: anyone who reaches it would read your prompts and answers; use an SSH tunnel to 127.0.0.1, or add --allow-remote and set $%s", *addr, serveTokenVar)}
		}
		if token = env.getenv(serveTokenVar); len(token) < 16 {
			return &exitError{code: exitUsage, err: fmt.Errorf("--allow-remote needs a token of at least 16 characters in $%s (for example: export %s=$(openssl rand -hex 16))", serveTokenVar, serveTokenVar)}
		}
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return fmt.Errorf("serve: %w", err)
	}
	srv := &http.Server{Handler: &liveReport{p: p, token: token}, ReadHeaderTimeout: 10 * time.Second}
	fmt.Fprintf(env.stderr, "serving the report of %s at http://%s/ (Ctrl-C stops)\n", p.Spec.Name, ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
		shut, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		srv.Shutdown(shut)
		return nil
	}
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// liveReport serves the report page, built from the store at most every
// pageTTL.
type liveReport struct {
	p     *engine.Pipeline
	token string

	mu    sync.Mutex
	store *state.Store
	page  *report.Page
	built time.Time
	took  time.Duration
}

// securityPolicy lets the page run only its own inline script and style
// and fetch only its own server.
const securityPolicy = "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; connect-src 'self'; img-src data:"

func (l *liveReport) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		http.Error(w, "only GET", http.StatusMethodNotAllowed)
		return
	}
	if !l.authorized(w, r) {
		return
	}
	w.Header().Set("Content-Security-Policy", securityPolicy)
	w.Header().Set("Cache-Control", "no-store")
	page, err := l.current(r.Context())
	if err != nil {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusServiceUnavailable)
		waiting.Execute(w, l.p.Spec.Redact(err.Error()))
		return
	}
	var buf bytes.Buffer
	if r.URL.Query().Get("part") == "charts" {
		err = page.RenderCharts(&buf)
	} else {
		err = page.Render(&buf)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	io.WriteString(w, l.p.Spec.Redact(buf.String()))
}

// authorized checks the Host header on loopback (a page elsewhere must not
// reach this server by rebinding its own name to 127.0.0.1) and the token
// when remote: from ?token= once, then from the cookie it sets.
func (l *liveReport) authorized(w http.ResponseWriter, r *http.Request) bool {
	if l.token == "" {
		host, _, err := net.SplitHostPort(r.Host)
		if err != nil {
			host = r.Host
		}
		if !isLoopback(host) {
			http.Error(w, "this server answers only requests for localhost or a loopback address", http.StatusForbidden)
			return false
		}
		return true
	}
	given := r.URL.Query().Get("token")
	if given == "" {
		if c, err := r.Cookie("eaglet_token"); err == nil {
			given = c.Value
		}
	}
	if subtle.ConstantTimeCompare([]byte(given), []byte(l.token)) != 1 {
		http.Error(w, "missing or wrong token: open the page as /?token=<the value of $"+serveTokenVar+">", http.StatusUnauthorized)
		return false
	}
	http.SetCookie(w, &http.Cookie{Name: "eaglet_token", Value: l.token, Path: "/", HttpOnly: true, SameSite: http.SameSiteStrictMode})
	return true
}

// current returns the page, rebuilt when older than pageTTL. The store is
// opened read-only on first use, so serve may start before the run.
func (l *liveReport) current(ctx context.Context) (*report.Page, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.page != nil && time.Since(l.built) < max(pageTTL, 5*l.took) {
		return l.page, nil
	}
	if l.store == nil {
		s, err := state.OpenReadOnly(l.p.Spec.State)
		if err != nil {
			return nil, err
		}
		l.store = s
	}
	start := time.Now()
	in, err := reportInput(l.p, l.store, true)
	if err != nil {
		return nil, fmt.Errorf("build the report: %w", err)
	}
	page, err := report.Build(ctx, l.store, in)
	if err != nil {
		if errors.Is(err, context.Canceled) {
			return nil, err
		}
		return nil, fmt.Errorf("build the report: %w", err)
	}
	l.page, l.built, l.took = page, time.Now(), time.Since(start)
	return page, nil
}

// waiting is the page shown until the store can be read: it reloads itself.
var waiting = template.Must(template.New("waiting").Parse(`<!DOCTYPE html><html><head><meta charset="utf-8">` +
	`<meta http-equiv="refresh" content="3"><title>eaglet: waiting for the store</title></head>` +
	`<body><p>{{.}}</p><p>This page reloads every 3 seconds.</p></body></html>`))
