package dedupe

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

func TestExactHash(t *testing.T) {
	rec := func(msgs ...string) *conv.Record {
		r := &conv.Record{}
		for i := 0; i+1 < len(msgs); i += 2 {
			r.Messages = append(r.Messages, conv.Message{Role: msgs[i], Content: msgs[i+1]})
		}
		return r
	}
	base := rec("system", "Be brief.", "user", "What is a monad?")
	withTool := rec("system", "Be brief.", "user", "What is a monad?")
	withTool.Tools = []conv.ToolDef{{Name: "search", Parameters: json.RawMessage(`{}`)}}
	tests := []struct {
		name  string
		other *conv.Record
		same  bool
	}{
		{"case and whitespace", rec("system", "  be BRIEF.", "user", "What   is a\n\tmonad?"), true},
		{"an answer is not the prompt", rec("system", "Be brief.", "user", "What is a monad?", "assistant", "A monoid."), true},
		{"another role", rec("user", "Be brief.", "user", "What is a monad?"), false},
		{"words moved between messages", rec("system", "Be brief. What", "user", "is a monad?"), false},
		{"punctuation", rec("system", "Be brief", "user", "What is a monad?"), false},
		{"tools offered", withTool, false},
	}
	for _, tt := range tests {
		if got := exactHash(tt.other) == exactHash(base); got != tt.same {
			t.Errorf("%s: same = %v, want %v", tt.name, got, tt.same)
		}
	}
}

// TestFold_UnicodeCaseAndCompatibility: prompts that differ only in case,
// under full Unicode case folding, or in compatibility forms (NFKC) are
// one prompt to every check: the exact hash, the n-grams decontamination
// matches and the MinHash signatures near duplicates are found by.
func TestFold_UnicodeCaseAndCompatibility(t *testing.T) {
	tests := []struct {
		name string
		a, b string
		same bool
	}{
		{"sharp s and SS", "Die Straße ist lang", "DIE STRASSE IST LANG", true},
		{"sharp s and ss", "die straße ist lang", "die strasse ist lang", true},
		{"capital sharp s", "\u1e9e", "ss", true},
		{"final sigma and sigma", "ΟΔΟΣ ΚΑΙ ΛΟΓΟΣ", "οδος και λογος", true},
		{"final sigma written as medial", "οδοσ και λογοσ", "οδος και λογος", true},
		{"fullwidth forms", "ＷＨＡＴ ｉｓ ２＋２？", "what is 2+2?", true},
		{"ligatures", "ﬁnd the ﬂoor ﬃ", "find the floor ffi", true},
		{"titlecase digraph", "ǅemal", "DŽEMAL", true},
		{"Kelvin and Angstrom signs", "\u212a \u212b", "k å", true},
		{"composed and decomposed", "caf\u00e9", "cafe\u0301", true},
		{"ideographic space", "a\u3000b", "a b", true},
		{"accents are kept", "résumé", "resume", false},
		{"dotless i is its own letter", "ılık", "ilik", false},
		{"other words", "Die Straße ist lang", "Die Straße ist kurz", false},
	}
	const n = 3
	mh := newMinHasher(128, n)
	for _, tt := range tests {
		ra := &conv.Record{Messages: []conv.Message{{Role: "user", Content: tt.a}}}
		rb := &conv.Record{Messages: []conv.Message{{Role: "user", Content: tt.b}}}
		if got := exactHash(ra) == exactHash(rb); got != tt.same {
			t.Errorf("%s: exact hash equal = %v, want %v", tt.name, got, tt.same)
		}
		wa, wb := wordHashes(nil, []string{tt.a}), wordHashes(nil, []string{tt.b})
		if got := slices.Equal(wa, wb); got != tt.same {
			t.Errorf("%s: words equal = %v, want %v (%q, %q)", tt.name, got, tt.same, wordsOf([]string{tt.a}), wordsOf([]string{tt.b}))
		}
		if len(wa) >= n {
			if got := slices.Equal(grams([]string{tt.a}, n), grams([]string{tt.b}, n)); got != tt.same {
				t.Errorf("%s: n-grams equal = %v, want %v", tt.name, got, tt.same)
			}
			sa, _ := mh.sign(nil, wa)
			sb, _ := mh.sign(nil, wb)
			if got := similarity(sa, sb) == 1; got != tt.same {
				t.Errorf("%s: signatures equal = %v, want %v", tt.name, got, tt.same)
			}
		}
	}
}

func grams(parts []string, n int) []uint64 {
	var out []uint64
	eachGram(wordHashes(nil, parts), n, func(h uint64, _ int) bool {
		out = append(out, h)
		return true
	})
	return out
}

func TestGrams_StraddleMessagesIgnoreCaseAndSpacing(t *testing.T) {
	tests := []struct {
		a, b []string
		n    int
		// shared is how many grams of a are grams of b.
		shared int
	}{
		{[]string{"one two three", "four five"}, []string{"THREE, four\n five!"}, 3, 1},
		{[]string{"one two three", "four five"}, []string{"one two three four five"}, 5, 1},
		{[]string{"one two three", "four five"}, []string{"one two four three five"}, 2, 1},
		{[]string{"日本語のテキスト"}, []string{"語のテ"}, 3, 1},
		{[]string{"x y"}, []string{"x y"}, 3, 0},
	}
	for _, tt := range tests {
		in := map[uint64]bool{}
		for _, h := range grams(tt.b, tt.n) {
			in[h] = true
		}
		shared := 0
		for _, h := range grams(tt.a, tt.n) {
			if in[h] {
				shared++
			}
		}
		if shared != tt.shared {
			t.Errorf("%q vs %q, n=%d: %d shared, want %d", tt.a, tt.b, tt.n, shared, tt.shared)
		}
	}
}

// TestSimilarity_EstimatesJaccard compares the signature estimate with
// the exact Jaccard similarity of shingle sets, over texts with a share of
// their words replaced.
func TestSimilarity_EstimatesJaccard(t *testing.T) {
	const numPerm, shingle = 128, 5 // the defaults
	r := rand.New(rand.NewPCG(1, 2))
	mh := newMinHasher(numPerm, shingle)
	word := func() string { return fmt.Sprintf("w%d", r.IntN(5000)) }
	for _, replace := range []float64{0, 0.01, 0.03, 0.1, 0.3, 1} {
		a := make([]string, 300)
		for i := range a {
			a[i] = word()
		}
		b := append([]string(nil), a...)
		for i := range b {
			if r.Float64() < replace {
				b[i] = word()
			}
		}
		sa, _ := mh.sign(nil, wordHashes(nil, []string{strings.Join(a, " ")}))
		sb, _ := mh.sign(nil, wordHashes(nil, []string{strings.Join(b, " ")}))
		ga, gb := map[uint64]bool{}, map[uint64]bool{}
		for _, h := range grams([]string{strings.Join(a, " ")}, shingle) {
			ga[h] = true
		}
		both := 0
		for _, h := range grams([]string{strings.Join(b, " ")}, shingle) {
			if !gb[h] && ga[h] {
				both++
			}
			gb[h] = true
		}
		exact := float64(both) / float64(len(ga)+len(gb)-both)
		// Four standard deviations of a 128-permutation estimate.
		if est := similarity(sa, sb); math.Abs(est-exact) > 4*math.Sqrt(exact*(1-exact)/numPerm)+0.02 {
			t.Errorf("%.0f%% replaced: estimate %.3f, exact %.3f", 100*replace, est, exact)
		}
	}
}

// TestLSHParams checks that pairs at the threshold mostly become
// candidates (a missed pair costs a generation) and pairs well below it
// mostly do not (each costs a comparison).
func TestLSHParams(t *testing.T) {
	for _, tt := range []struct {
		threshold float64
		numPerm   int
	}{{0.8, 128}, {0.5, 128}, {0.9, 256}, {0.7, 64}} {
		b, r := lshParams(tt.threshold, tt.numPerm)
		candidate := func(s float64) float64 { return 1 - math.Pow(1-math.Pow(s, float64(r)), float64(b)) }
		if b*r > tt.numPerm || candidate(tt.threshold) < 0.8 || candidate(tt.threshold-0.3) > 0.15 {
			t.Errorf("threshold %v over %d: %d bands of %d rows find %.2f of pairs at it, %.2f of pairs 0.3 below",
				tt.threshold, tt.numPerm, b, r, candidate(tt.threshold), candidate(tt.threshold-0.3))
		}
	}
}
