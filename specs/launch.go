package specs

import (
	"errors"
	"strconv"
	"sync"

	"github.com/hashicorp/go-multierror"
	"gopkg.in/yaml.v3"
)

// LaunchCheck decodes and checks an endpoint's `launch:` mapping, returning
// every problem at once, each a *Error at its key. The launcher registers
// it (RegisterLaunch): it imports specs, so specs cannot call it by name.
type LaunchCheck func(s *Spec, ep *Endpoint) error

var (
	launchMu    sync.RWMutex
	launchCheck LaunchCheck
)

// RegisterLaunch makes check the check of every endpoint's `launch:`; it
// panics when called twice, as RegisterAPI does for a name.
func RegisterLaunch(check LaunchCheck) {
	launchMu.Lock()
	defer launchMu.Unlock()
	if check == nil || launchCheck != nil {
		panic("specs: RegisterLaunch needs one check, registered once")
	}
	launchCheck = check
}

// checkLaunch refuses `urls:` beside `launch:`, whose servers' URLs are
// eaglet's to pick, and runs the launcher's check. A program built without
// the launcher (specs' own tests) checks only the first.
func checkLaunch(s *Spec, ep *Endpoint, errs *errorList) {
	if ep.Launch == nil {
		return
	}
	if len(ep.URLs) > 0 {
		p := ep.KeyPos("urls")
		errs.at(p.Line, p.Col, "endpoint %s: give `urls:` or `launch:`, not both: a launched endpoint's URLs are those of the servers eaglet starts", ep.Name)
	}
	launchMu.RLock()
	check := launchCheck
	launchMu.RUnlock()
	if check == nil {
		return
	}
	err := check(s, ep)
	var me *multierror.Error
	if !errors.As(err, &me) {
		if err != nil {
			errs.add(err)
		}
		return
	}
	for _, e := range me.Errors {
		errs.add(e)
	}
}

// KeyPos returns where the endpoint's key (urls, launch, ...) is written,
// or the endpoint's own position when it is not.
func (ep *Endpoint) KeyPos(key string) Pos {
	k, _ := mapEntry(ep.node, key)
	return ep.nodePos(k)
}

// LaunchKeyPos returns where the launch option at path (keys of `launch:`,
// then of mappings within it, or indexes of lists, "0" for the first) is
// written: the key of a mapping entry, the item of a list. When the spec
// leaves it out (its default is the value refused) it is the nearest
// enclosing key written, `launch:` itself at worst.
func (ep *Endpoint) LaunchKeyPos(path ...string) Pos {
	at, _ := mapEntry(ep.node, "launch")
	n := ep.Launch
	for _, name := range path {
		if n != nil && n.Kind == yaml.AliasNode {
			n = n.Alias
		}
		if i, err := strconv.Atoi(name); err == nil && n != nil && n.Kind == yaml.SequenceNode {
			if i < 0 || i >= len(n.Content) {
				break
			}
			n = n.Content[i]
			at = n
			continue
		}
		k, v := mapEntry(n, name)
		if k == nil {
			break
		}
		at, n = k, v
	}
	return ep.nodePos(at)
}

func (ep *Endpoint) nodePos(n *yaml.Node) Pos {
	if n == nil {
		return ep.Pos
	}
	return Pos{File: ep.Pos.File, Line: n.Line, Col: n.Column}
}
