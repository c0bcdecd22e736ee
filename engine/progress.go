package engine

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/eaglet-dev/eaglet/internal/human"
	"github.com/eaglet-dev/eaglet/stages"
	"github.com/eaglet-dev/eaglet/state"
)

// progress reports a run: on a terminal a table redrawn in place; in a file
// timestamped lines, one per instance per interval, that read well later.
type progress struct {
	mu    sync.Mutex
	w     io.Writer
	live  bool
	every time.Duration
	nodes []*Node
	st    map[*Node]*nodeProgress
	// drawn is how many lines the live table occupies, to redraw over it.
	drawn   int
	pending []string
	stopped chan struct{}
	once    sync.Once
}

type nodeProgress struct {
	state                          string
	total, already                 int
	done, dropped, skipped, failed int
	// kept counts done outcomes kept from earlier runs; reused the done
	// outcomes of this run found again rather than made (stages.Costly);
	// duplicates the records a batch stage emitted twice, stored once.
	kept, reused, duplicates       int
	promptTokens, completionTokens int64
	// reusedTokens are the completion tokens of the reused outcomes: they
	// cost this run nothing, so rates and the finished line keep them
	// apart.
	reusedTokens                   int64
	started, finished, lastPrinted time.Time
	note                           string
	// errors counts failures by kind ("http 503", "no answer within 30m").
	errors map[string]int
	// extra reports what only the stage knows (budget used, cost so far).
	extra stages.Progressor
}

func newProgress(w io.Writer, live bool, every time.Duration, nodes []*Node) *progress {
	if every == 0 {
		every = 10 * time.Second
		if live {
			every = time.Second
		}
	}
	p := &progress{w: w, live: live, every: every, nodes: nodes, st: map[*Node]*nodeProgress{}, stopped: make(chan struct{})}
	for _, n := range nodes {
		p.st[n] = &nodeProgress{state: "waiting"}
	}
	return p
}

func (p *progress) start() func() {
	go func() {
		t := time.NewTicker(p.every)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				p.tick()
			case <-p.stopped:
				return
			}
		}
	}()
	return func() {
		p.once.Do(func() {
			close(p.stopped)
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.live {
				p.redraw()
			}
		})
	}
}

func stamp() string { return Stamp(time.Now()) }

// Stamp formats t as log lines begin, so lines from outside the engine
// (an interrupt) line up with its own.
func Stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05Z") }

// line prints an event: above the live table, or as a timestamped line.
func (p *progress) line(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	msg := fmt.Sprintf("%s %s", stamp(), fmt.Sprintf(format, args...))
	if p.live {
		p.pending = append(p.pending, msg)
		p.redraw()
		return
	}
	fmt.Fprintln(p.w, msg)
}

func (p *progress) logger(n *Node) func(string, ...any) {
	return func(format string, args ...any) { p.line("%s: %s", n.ID, fmt.Sprintf(format, args...)) }
}

// watch attaches a stage's own progress figures to its instance.
func (p *progress) watch(n *Node, x stages.Progressor) {
	p.mu.Lock()
	p.st[n].extra = x
	p.mu.Unlock()
}

func (p *progress) begin(n *Node, total, already, kept int) {
	p.mu.Lock()
	s := p.st[n]
	s.state, s.total, s.already, s.kept, s.started = "running", total, already, kept, time.Now()
	s.lastPrinted = s.started
	p.mu.Unlock()
	msg := n.ID + ": started"
	if total > 0 {
		msg += ", " + human.Plural(total, "record")
		if already > 0 {
			msg += fmt.Sprintf(" (%d already done, %d to go)", already, max(total-already, 0))
		}
	}
	// A load does not know its total yet, but the log still says it began.
	p.line("%s", msg)
}

// counted fills in what an instance that began before counting had done in
// earlier runs, once counted.
func (p *progress) counted(n *Node, already, kept int) {
	p.mu.Lock()
	s := p.st[n]
	s.already, s.kept = already, kept
	total := s.total
	p.mu.Unlock()
	if already > 0 {
		p.line("%s: %d already done, %d to go", n.ID, already, max(total-already, 0))
	}
}

func (p *progress) add(n *Node, it state.Item) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.st[n]
	switch stages.Status(it.Status) {
	case stages.Done:
		s.done++
		if it.Reused {
			s.reused++
			s.reusedTokens += int64(it.CompletionTokens)
		}
		// Only what is passed on counts: a filter's dropped records take
		// their tokens with them.
		s.promptTokens += int64(it.PromptTokens)
		s.completionTokens += int64(it.CompletionTokens)
	case stages.Dropped:
		s.dropped++
	case stages.Skipped:
		s.skipped++
	case stages.Failed:
		s.failed++
		if s.errors == nil {
			s.errors = map[string]int{}
		}
		s.errors[errorKind(it.Reason)]++
	}
}

// duplicates says that n of the records a batch stage emitted repeated an
// earlier key and were stored once: they are not done twice.
func (p *progress) duplicates(node *Node, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.st[node]
	s.duplicates += n
	s.done -= n
}

// settled counts as dropped a record added as passed on (a batch stage's
// SettleOutput), with its tokens.
func (p *progress) settled(n *Node, it state.Item) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s := p.st[n]
	s.done--
	s.dropped++
	s.promptTokens -= int64(it.PromptTokens)
	s.completionTokens -= int64(it.CompletionTokens)
}

// finish ends an instance's progress: done when note is empty, else the
// note (up to date, blocked, interrupted) is its state.
func (p *progress) finish(n *Node, note string) {
	state := note
	if note == "" {
		state = "done"
	}
	p.end(n, state, note)
}

// fail ends an instance's progress with the error that stopped it.
func (p *progress) fail(n *Node, msg string) { p.end(n, "failed", "FAILED: "+msg) }

// end sets an instance's final state and logs how it ended: note, or
// with no note the figures of a finished instance.
func (p *progress) end(n *Node, state, note string) {
	p.mu.Lock()
	s := p.st[n]
	s.finished, s.note, s.state = time.Now(), note, state
	summary := s.summary()
	p.mu.Unlock()
	if note == "" {
		p.line("%s: finished in %s: %s", n.ID, fmtDuration(s.finished.Sub(s.started)), summary)
	} else {
		p.line("%s: %s", n.ID, note)
	}
}

func (s *nodeProgress) handled() int { return s.done + s.dropped + s.skipped + s.failed }

func (s *nodeProgress) summary() string {
	parts := []string{fmt.Sprintf("%d done", s.done)}
	if s.reused > 0 {
		parts[0] += fmt.Sprintf(" (%d reused)", s.reused)
	}
	for _, c := range []struct {
		n    int
		what string
	}{{s.kept, "%d kept from before"}, {s.dropped, "%d dropped"}, {s.skipped, "%d skipped"}, {s.failed, "%d failed"}} {
		if c.n > 0 {
			parts = append(parts, fmt.Sprintf(c.what, c.n))
		}
	}
	if s.duplicates > 0 {
		parts = append(parts, human.Plural(s.duplicates, "duplicate"))
	}
	if s.completionTokens > 0 {
		tokens := human.Int(s.completionTokens) + " completion tokens"
		if s.reusedTokens > 0 {
			tokens += " (" + human.Int(s.reusedTokens) + " of them reused)"
		}
		parts = append(parts, tokens)
	}
	return strings.Join(parts, ", ")
}

// status renders one running instance: counts, rate, tokens and ETA.
func (s *nodeProgress) status(now time.Time) string {
	elapsed := now.Sub(s.started).Seconds()
	h := s.handled()
	todo := max(s.total-s.already, 0)
	var b strings.Builder
	if s.total > 0 {
		fmt.Fprintf(&b, "%d/%d %3.0f%%", s.already+h, s.total, 100*float64(s.already+h)/float64(s.total))
	} else {
		// A load does not know its total until the file is read.
		fmt.Fprintf(&b, "%d", s.already+h)
	}
	if elapsed > 0 && h > 0 {
		rate := float64(h) / elapsed
		fmt.Fprintf(&b, "  %s rec/s", human.Count(rate))
		// The server's speed: answers found again were not generated.
		if made := s.completionTokens - s.reusedTokens; made > 0 {
			fmt.Fprintf(&b, "  %s tok/s", human.Count(float64(made)/elapsed))
		}
		left := todo - h
		if bd, ok := s.extra.(stages.Bounded); ok {
			if n := bd.Left(); n >= 0 {
				left = min(left, n)
			}
		}
		if left > 0 {
			fmt.Fprintf(&b, "  ETA %s", fmtDuration(time.Duration(float64(left)/rate*float64(time.Second))))
		}
	}
	if s.done > 0 && s.completionTokens > 0 {
		fmt.Fprintf(&b, "  mean %s tok", human.Count(float64(s.completionTokens)/float64(s.done)))
	}
	if s.failed > 0 {
		fmt.Fprintf(&b, "  %d failed (%s)", s.failed, topKinds(s.errors, 3))
	}
	if s.skipped > 0 {
		fmt.Fprintf(&b, "  %d skipped", s.skipped)
	}
	if s.extra != nil {
		if x := s.extra.Progress(); x != "" {
			b.WriteString("  " + x)
		}
	}
	return b.String()
}

// errorKind shortens a failure to its kind: the part before the first
// colon ("http 503", "no answer within 30m"), at most 60 characters.
func errorKind(reason string) string {
	if i := strings.IndexByte(reason, ':'); i > 0 {
		reason = reason[:i]
	}
	if len(reason) > 60 {
		reason = reason[:57] + "..."
	}
	return reason
}

// topKinds lists the n most frequent kinds as "http 503 x4, timeout x1".
func topKinds(m map[string]int, n int) string {
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	sort.Slice(kinds, func(i, j int) bool {
		return m[kinds[i]] > m[kinds[j]] || (m[kinds[i]] == m[kinds[j]] && kinds[i] < kinds[j])
	})
	var parts []string
	for i, k := range kinds {
		if i == n {
			parts = append(parts, "...")
			break
		}
		parts = append(parts, fmt.Sprintf("%s x%d", k, m[k]))
	}
	return strings.Join(parts, ", ")
}

// overall sums the running instances into one line.
func (p *progress) overall(now time.Time) string {
	var total, done, failed int
	var tokens int64
	var start time.Time
	running := 0
	for _, n := range p.nodes {
		s := p.st[n]
		if s.state != "running" || s.total == 0 {
			continue
		}
		running++
		total += s.total
		done += s.already + s.handled()
		failed += s.failed
		tokens += s.completionTokens - s.reusedTokens
		if start.IsZero() || s.started.Before(start) {
			start = s.started
		}
	}
	if running < 2 {
		return ""
	}
	line := fmt.Sprintf("%d/%d records in %d running instances", done, total, running)
	if el := now.Sub(start).Seconds(); el > 0 && tokens > 0 {
		line += fmt.Sprintf(", %s tok/s", human.Count(float64(tokens)/el))
	}
	if failed > 0 {
		line += fmt.Sprintf(", %d failed", failed)
	}
	return line
}

func (p *progress) tick() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.live {
		p.redraw()
		return
	}
	now := time.Now()
	for _, n := range p.nodes {
		s := p.st[n]
		if s.state == "running" && s.total > 0 && now.Sub(s.lastPrinted) >= p.every*9/10 {
			s.lastPrinted = now
			fmt.Fprintf(p.w, "%s %s: %s\n", stamp(), n.ID, s.status(now))
		}
	}
	if o := p.overall(now); o != "" {
		fmt.Fprintf(p.w, "%s overall: %s\n", stamp(), o)
	}
}

// redraw replaces the live table; called with p.mu held.
func (p *progress) redraw() {
	var b strings.Builder
	if p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA\x1b[J", p.drawn)
	}
	for _, l := range p.pending {
		b.WriteString(l + "\n")
	}
	p.pending = p.pending[:0]
	lines := 0
	now := time.Now()
	select {
	case <-p.stopped:
		// Final draw: leave only the event lines.
	default:
		for _, n := range p.nodes {
			s := p.st[n]
			var text string
			switch s.state {
			case "running":
				text = s.status(now)
			case "done":
				text = "done: " + s.summary()
			default:
				text = s.state
			}
			fmt.Fprintf(&b, "  %-32s %s\n", n.ID, text)
			lines++
		}
		if o := p.overall(now); o != "" {
			fmt.Fprintf(&b, "  %-32s %s\n", "overall", o)
			lines++
		}
	}
	p.drawn = lines
	io.WriteString(p.w, b.String())
}

func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%dms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1fs", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh%02dm", int(d.Hours()), int(d.Minutes())%60)
}
