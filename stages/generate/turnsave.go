package generate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"sync"

	"github.com/eaglet-dev/eaglet/internal/conv"
	"github.com/eaglet-dev/eaglet/stages"
)

// answersSoFar keeps the answers a record of several (an MT-Bench pair,
// turns: all) has had, one checkpoint per record, so a run killed in the
// middle of a record asks only for the answers it had not had: each
// answer is paid for, and a conversation's later answers are conditioned
// on the earlier ones. A checkpoint belongs to the instance's
// configuration and to the record's prompt; it is dropped once the record
// is answered, and ignored when the run redoes the instance (--force).
type answersSoFar struct {
	cp  stages.Checkpoints
	key string
	// prompt hashes what the record asks (promptHash).
	prompt string
	// total is how many answers the record asks for; saved are those an
	// interrupted run kept, in the order they were asked.
	total int
	saved []*conv.Generation
}

// errStop ends a look-up at the first checkpoint: the key itself sorts
// before every longer key it is a prefix of.
var errStop = errors.New("stop")

// savedAnswers is a checkpoint's value.
type savedAnswers struct {
	// Prompt hashes what the record asks, so an edited source line does
	// not take another prompt's answers.
	Prompt  string             `json:"prompt"`
	Answers []*conv.Generation `json:"answers"`
}

// keptTurns is where an instance keeps the answers of its records of
// several answers: its checkpoints, under its configuration.
type keptTurns struct {
	// inst is read as each record asks: the engine fingerprints the
	// configuration, and says whether the run redoes it, after the stage
	// is built.
	inst *stages.Instance
	// any says, once asked, whether an earlier run kept answers (anyKept).
	once sync.Once
	any  bool
}

// of returns the checkpoint of a record asking total answers, with the
// answers an interrupted run kept of it; nil for a record of one answer,
// or without a store to keep them in.
func (k *keptTurns) of(rec *conv.Record, total int) *answersSoFar {
	if total < 2 || k == nil || k.inst.Checkpoints == nil {
		return nil
	}
	s := &answersSoFar{cp: k.inst.Checkpoints, key: "answers/" + k.inst.ConfigFP + "/" + rec.Key,
		prompt: promptHash(rec), total: total}
	if k.inst.Force || !k.anyKept() {
		return s
	}
	var kept savedAnswers
	found := false
	_ = s.cp.EachCheckpoint(s.key, func(key string, value []byte) error {
		if key == s.key {
			found = json.Unmarshal(value, &kept) == nil
		}
		return errStop
	})
	if found && kept.Prompt == s.prompt {
		s.saved = kept.Answers
	}
	return s
}

// anyKept says whether an earlier run of this configuration kept answers
// at all, asked once a run: most runs find none, and a look-up per record
// would cost a read of the store for each.
func (k *keptTurns) anyKept() bool {
	k.once.Do(func() {
		_ = k.inst.Checkpoints.EachCheckpoint("answers/"+k.inst.ConfigFP+"/", func(string, []byte) error {
			k.any = true
			return errStop
		})
	})
	return k.any
}

// promptHash identifies what a record asks: its messages, tools and
// prompt ids.
func promptHash(rec *conv.Record) string {
	b, _ := json.Marshal(struct {
		M []conv.Message `json:"m"`
		T any            `json:"t,omitempty"`
		I []int          `json:"i,omitempty"`
	}{rec.Messages, rec.Tools, rec.PromptIDs})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12])
}

// known is the completion tokens of the kept answers.
func (s *answersSoFar) known() int {
	n := 0
	if s != nil {
		for _, gen := range s.saved {
			n += gen.CompletionTokens
		}
	}
	return n
}

// kept returns the answer an interrupted run kept for the record's step'th
// request (from 1), if any.
func (s *answersSoFar) kept(step int) (*conv.Generation, bool) {
	if s == nil || step > len(s.saved) {
		return nil, false
	}
	return s.saved[step-1], true
}

// save keeps the answers so far, but the last (the record is then
// answered), in the next batch of checkpoints: a kill loses at most the
// last moment's, asked again. A checkpoint that cannot be written costs
// only that too, so it does not fail the record.
func (s *answersSoFar) save(answers []*conv.Generation) {
	if s == nil || len(answers) >= s.total {
		return
	}
	if b, err := json.Marshal(savedAnswers{Prompt: s.prompt, Answers: answers}); err == nil {
		s.cp.KeepLater(s.key, b)
	}
}

// drop forgets the checkpoint once the record is answered.
func (s *answersSoFar) drop() {
	if s != nil {
		s.cp.KeepLater(s.key, nil)
	}
}

// flush writes the answers so far at once, for a run that is stopping.
func (s *answersSoFar) flush() {
	if s != nil {
		_ = s.cp.Flush()
	}
}
