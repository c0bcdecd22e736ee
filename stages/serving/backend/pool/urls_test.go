package pool

import "testing"

// TestPool_TakeOutAndReplace: a URL taken out gets no request while
// another is in service; the URL put in its place gets them at once,
// and a request still held on the old one is released without harm.
func TestPool_TakeOutAndReplace(t *testing.T) {
	p, err := New(Config{URLs: []string{"http://a:1", "http://b:1/"}})
	if err != nil {
		t.Fatal(err)
	}
	held, err := p.Acquire()
	if err != nil || held.Base != "http://a:1" {
		t.Fatalf("first acquire: %v, %v", held, err)
	}
	p.TakeOut("http://a:1", "process exited")
	for range 3 {
		u, err := p.Acquire()
		if err != nil || u.Base != "http://b:1" {
			t.Fatalf("acquire with a taken out: %v, %v; want b", u, err)
		}
	}
	if n := p.Healthy(); n != 1 {
		t.Errorf("%d URLs in service, want 1", n)
	}
	if !p.Replace("http://a:1/", "http://c:2") || p.Replace("http://gone:1", "http://d:1") {
		t.Fatal("Replace found the wrong URLs")
	}
	p.Release(held, nil)
	if u, err := p.Acquire(); err != nil || u.Base != "http://c:2" {
		t.Fatalf("acquire after the replace: %v, %v; want c, the least busy", u, err)
	}
	if n := p.Healthy(); n != 2 {
		t.Errorf("%d URLs in service, want 2", n)
	}
}
