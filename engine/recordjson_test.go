package engine

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/eaglet-dev/eaglet/internal/conv"
)

// TestRecordJSON_AsMarshal: records marshalled through one reused buffer
// are, one after another, the bytes json.Marshal gives (HTML escaped,
// no newline), so stored records and their hashes stay what they were.
func TestRecordJSON_AsMarshal(t *testing.T) {
	var j recordJSON
	for _, rec := range []*conv.Record{
		{Key: "k1", Dataset: "d", Messages: []conv.Message{{Role: "user", Content: "a <b> & \"c\"\n\u2028 é"}}},
		{Key: "k2", Messages: []conv.Message{{Role: "user", Content: "short"}}},
		{Key: "k3"},
	} {
		want, err := json.Marshal(rec)
		if err != nil {
			t.Fatal(err)
		}
		got, err := j.marshal(rec)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("record %s: %s (%v); json.Marshal gives %s", rec.Key, got, err, want)
		}
		c := *rec
		c.Key, c.Dataset, c.Source = "", "", conv.Source{}
		c.Messages = conv.Unspelt(c.Messages)
		content, err := json.Marshal(&c)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := j.contentHash(rec), hashBytes(content); got != want {
			t.Errorf("record %s: content hash %q through the buffer; %q from json.Marshal", rec.Key, got, want)
		}
	}
}
