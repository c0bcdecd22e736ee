package generate

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

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
	cp    stages.Checkpoints
	key   string
	force bool
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

func (g *Generate) answersSoFar(rec *conv.Record) *answersSoFar {
	if g.inst == nil || g.inst.Checkpoints == nil {
		return nil
	}
	return &answersSoFar{cp: g.inst.Checkpoints, key: "answers/" + g.inst.ConfigFP + "/" + rec.Key, force: g.inst.Force}
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

// load returns the answers an earlier run had for rec, in the order they
// were asked; none when there is no checkpoint or it is of another prompt.
func (s *answersSoFar) load(rec *conv.Record) []*conv.Generation {
	if s == nil || s.force {
		return nil
	}
	var saved savedAnswers
	found := false
	_ = s.cp.EachCheckpoint(s.key, func(key string, value []byte) error {
		if key == s.key {
			found = json.Unmarshal(value, &saved) == nil
		}
		return errStop
	})
	if !found || saved.Prompt != promptHash(rec) {
		return nil
	}
	return saved.Answers
}

// save keeps the answers so far, in the next batch of checkpoints: a kill
// loses at most the last moment's, asked again. A checkpoint that cannot
// be written costs only that too, so it does not fail the record.
func (s *answersSoFar) save(rec *conv.Record, answers []*conv.Generation) {
	if s == nil {
		return
	}
	if b, err := json.Marshal(savedAnswers{Prompt: promptHash(rec), Answers: answers}); err == nil {
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
