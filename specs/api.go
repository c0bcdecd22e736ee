package specs

import (
	"sort"
	"sync"
)

// API is an endpoint API as a spec sees it. Each backend registers its own
// (stages/serving/backend/registry), so specs checks every endpoint against
// the APIs the program was built with and names no API itself.
type API struct {
	// Name is what an endpoint's `api:` says.
	Name string
	// Summary says in a line what the API is, for `eaglet kinds`.
	Summary string
	// NeedsURLs is set for an API served over HTTP: its endpoints must
	// list their servers' base URLs.
	NeedsURLs bool
	// Options returns a pointer to a new options struct that the
	// endpoint's `options:` decode into: every endpoint's options are
	// checked when the spec is parsed, whether a stage uses it or not.
	Options func() any
}

// OptionsProblem is a problem an API's options find in themselves beyond
// their types and tags, at the option Path names (keys under `options:`).
type OptionsProblem struct {
	Path []string
	Msg  string
}

// OptionsChecker is implemented by API options with rules of their own
// (two options that say the same thing): the spec check reports each
// problem at its option's line.
type OptionsChecker interface {
	Problems() []OptionsProblem
}

var (
	apiMu sync.RWMutex
	apis  = map[string]API{}
)

// RegisterAPI makes an endpoint API known by name; it panics on a
// duplicate name, as database/sql.Register does.
func RegisterAPI(a API) {
	apiMu.Lock()
	defer apiMu.Unlock()
	if a.Name == "" || a.Options == nil {
		panic("specs: RegisterAPI needs Name and Options")
	}
	if _, dup := apis[a.Name]; dup {
		panic("specs: RegisterAPI called twice for api " + a.Name)
	}
	apis[a.Name] = a
}

// LookupAPI returns the API registered under name.
func LookupAPI(name string) (API, bool) {
	apiMu.RLock()
	defer apiMu.RUnlock()
	a, ok := apis[name]
	return a, ok
}

// APINames lists the registered APIs, sorted.
func APINames() []string {
	apiMu.RLock()
	defer apiMu.RUnlock()
	names := make([]string, 0, len(apis))
	for n := range apis {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
