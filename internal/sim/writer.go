package sim

import "strings"

// writer produces plausible text one sim token at a time: sentences grouped
// in paragraphs, with an occasional fenced code block. Every piece it
// returns is exactly one sim token, so Count of the joined text equals the
// number of pieces.
type writer struct {
	r        rng
	think    bool // reasoning style: sentences open with "So", "Wait", ...
	code     bool // code blocks allowed
	pending  []string
	prefix   string // whitespace before the next word
	capNext  bool
	sentLeft int
	paraLeft int
	codeLeft int
	inCode   bool
}

func newWriter(seed uint64, think, code bool) *writer {
	w := &writer{r: rng{seed}, think: think, code: code, capNext: true}
	w.sentLeft = w.sentenceLen()
	w.paraLeft = 2 + w.r.intn(4)
	return w
}

func (w *writer) sentenceLen() int { return 5 + w.r.intn(14) }

// next returns the next piece.
func (w *writer) next() string {
	for len(w.pending) == 0 {
		w.refill()
	}
	p := w.pending[0]
	w.pending = w.pending[1:]
	return p
}

func (w *writer) refill() {
	switch {
	case w.inCode && w.codeLeft > 0:
		w.codeLeft--
		w.pending = Pieces(w.codeLine())
	case w.inCode:
		w.inCode = false
		w.pending = Pieces("\n```")
		w.prefix, w.capNext = "\n\n", true
	case w.sentLeft == 0:
		w.pending = []string{"."}
		w.sentLeft = w.sentenceLen()
		w.capNext = true
		w.prefix = " "
		if w.paraLeft--; w.paraLeft == 0 {
			w.paraLeft = 2 + w.r.intn(4)
			w.prefix = "\n\n"
			if w.code && w.r.float() < 0.25 {
				w.pending = append(w.pending, Pieces("\n\n```go")...)
				w.inCode, w.codeLeft = true, 3+w.r.intn(6)
			}
		}
	default:
		w.sentLeft--
		word := proseWords[w.r.intn(len(proseWords))]
		if w.capNext {
			if w.think && w.r.float() < 0.5 {
				word = reasoningOpeners[w.r.intn(len(reasoningOpeners))]
			} else {
				word = strings.ToUpper(word[:1]) + word[1:]
			}
			w.capNext = false
		}
		w.pending = []string{w.prefix + word}
		w.prefix = " "
		if w.sentLeft > 1 && w.r.float() < 0.08 {
			w.pending = append(w.pending, ",")
		}
	}
}

func (w *writer) codeLine() string {
	line := codeLines[w.r.intn(len(codeLines))]
	for strings.Contains(line, "@") {
		line = strings.Replace(line, "@", codeIdents[w.r.intn(len(codeIdents))], 1)
	}
	return line
}
