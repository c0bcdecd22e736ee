package pool

import (
	"strings"
	"time"
)

// Replace puts the server at url in the place of the one at old, as a
// server restarted on another port takes its predecessor's: requests from
// then on may go to url, in service from the start, while those in flight
// to old end there. It reports whether old was one of the pool's URLs.
func (p *Pool) Replace(old, url string) bool {
	old, url = strings.TrimRight(old, "/"), strings.TrimRight(url, "/")
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, u := range p.urls {
		if u.Base == old {
			p.urls[i] = newURL(url, p.cfg.Rest)
			return true
		}
	}
	return false
}

// TakeOut takes the server at url out of service at once, as failures in
// a row would, for one known to be gone (its process exited): no request
// need fail there to find out. Like any URL taken out, it is probed back
// after its rest, unless Replace puts another server in its place first.
func (p *Pool) TakeOut(url, cause string) {
	url = strings.TrimRight(url, "/")
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, u := range p.urls {
		if u.Base != url {
			continue
		}
		u.fails, u.cause = max(u.fails, p.cfg.FailAfter), cause
		if !u.down() {
			u.downUntil = time.Now().Add(u.rest)
			p.log("%s out of service: %s", u.Base, cause)
		}
	}
}
