package engine

import (
	"context"
	"strings"
	"time"

	"github.com/eaglet-dev/eaglet/stages"
)

// settling holds back the first request of an instance whose stage has one
// budget for all its datasets until its siblings have kept the answers they
// find again (a renamed or reordered dataset). Those cost nothing and take
// the budget first, as plan counts them; without the wait, a sibling with a
// short input spends the budget on new requests while a renamed dataset is
// still being read, and the answers already paid for are left out.
type settling struct {
	// peers are, for each instance that waits, the siblings it waits for.
	peers map[*Node][]*Node
	// settled is closed once an instance has kept what it finds again or
	// decided it looks for nothing; ended once it finished, however.
	settled, ended map[*Node]chan struct{}
}

// newSettling finds the instances of nodes (a run: every one's ancestors
// are among them) that wait. A sibling whose input is made by requests (a
// generate stage before it) is not waited for: it may take hours to be
// read, and its answers could not be known before then.
func newSettling(p *Pipeline, nodes []*Node, ended map[*Node]chan struct{}) *settling {
	s := &settling{peers: map[*Node][]*Node{}, settled: map[*Node]chan struct{}{}, ended: ended}
	fedWithoutRequests := func(n *Node) bool {
		for _, up := range p.Ancestors(n.Needs) {
			if _, asks := up.Stage.Options.(stages.EndpointUser); asks {
				return false
			}
		}
		return true
	}
	for _, n := range nodes {
		s.settled[n] = make(chan struct{})
		b, ok := n.Stage.Options.(stages.Budgeted)
		if !ok || b.BudgetLimits() == nil || !b.BudgetLimits().Shared {
			continue
		}
		for _, other := range nodes {
			if other != n && other.Stage == n.Stage && fedWithoutRequests(other) {
				s.peers[n] = append(s.peers[n], other)
			}
		}
	}
	return s
}

// settle says n has kept what it finds again.
func (s *settling) settle(n *Node) {
	if s != nil {
		close(s.settled[n])
	}
}

// wait returns once every sibling n waits for has settled or ended, or ctx
// is done. A wait of more than a second is logged with whom it is for; a
// first run's siblings, with nothing to find again, settle within it.
func (s *settling) wait(ctx context.Context, n *Node, logf func(string, ...any)) {
	if s == nil || len(s.peers[n]) == 0 {
		return
	}
	said := time.AfterFunc(time.Second, func() {
		var open []string
		for _, p := range s.peers[n] {
			if !s.over(p) {
				open = append(open, p.ID)
			}
		}
		if len(open) > 0 {
			logf("first request waits for %s to keep the answers found again (one budget for every dataset)", strings.Join(open, ", "))
		}
	})
	defer said.Stop()
	for _, p := range s.peers[n] {
		select {
		case <-s.settled[p]:
		case <-s.ended[p]:
		case <-ctx.Done():
			return
		}
	}
}

// over reports whether p has settled or ended.
func (s *settling) over(p *Node) bool {
	select {
	case <-s.settled[p]:
		return true
	case <-s.ended[p]:
		return true
	default:
		return false
	}
}
