package engine

import (
	"sync"

	"github.com/eaglet-dev/eaglet/state"
)

// flights makes sure that, within a run, one content is asked for once:
// two datasets with the same prompt (or a copy of a dataset) running side
// by side share the first request's answer instead of racing to send two.
// A flight lives until its outcome is committed; later askers find the
// answer in the store.
type flights struct {
	mu sync.Mutex
	m  map[string]*flight
	// instances counts the costly instances of the run by fingerprint.
	instances map[string]int
}

// started registers a costly instance that answers under fp.
func (fs *flights) started(fp string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.instances == nil {
		fs.instances = map[string]int{}
	}
	fs.instances[fp]++
}

// shared reports whether another instance of the run answers under fp, so
// answers may reach the store that its search before dispatch did not see.
func (fs *flights) shared(fp string) bool {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.instances[fp] > 1
}

// flight is one content being answered.
type flight struct {
	done chan struct{}
	// data is the leader's encoded output record when it got an answer.
	data []byte
}

// flightKey names a content under a fingerprint.
func flightKey(fp, inChash string) string { return fp + "\x00" + inChash }

// join returns the flight for key and whether the caller leads it (and
// must finish it); others wait on done.
func (fs *flights) join(key string) (*flight, bool) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if f, ok := fs.m[key]; ok {
		return f, false
	}
	if fs.m == nil {
		fs.m = map[string]*flight{}
	}
	f := &flight{done: make(chan struct{})}
	fs.m[key] = f
	return f, true
}

// finish publishes the leader's outcome: its data when it is an answer.
func (f *flight) finish(it state.Item) {
	if it.Status == 0 && it.Data != nil {
		f.data = it.Data
	}
	close(f.done)
}

// forget drops the flights of committed outcomes: the store has them now.
func (fs *flights) forget(items []state.Item) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	for _, it := range items {
		if it.InChash != "" {
			delete(fs.m, flightKey(it.FP, it.InChash))
		}
	}
}

// planned counts, in a dry run, the contents already to be asked for by
// another instance of the run, so plan counts each content's request once.
type planned struct {
	mu sync.Mutex
	m  map[string]bool
}

// claim reports whether key is new to the run's requests, and records it.
func (p *planned) claim(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.m[key] {
		return false
	}
	if p.m == nil {
		p.m = map[string]bool{}
	}
	p.m[key] = true
	return true
}
