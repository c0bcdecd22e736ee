package tokenizer

import "testing"

// FuzzEncode_RoundTrip checks that any input encodes without panicking and
// that byte-level tokenizers without a normalizer decode it back exactly
// (as U+FFFD where the input was not UTF-8). Beyond the seeds, run with
// go test -fuzz FuzzEncode_RoundTrip.
func FuzzEncode_RoundTrip(f *testing.F) {
	for _, s := range []string{"", "hello world", "\xff\xfe", "  \n\t x", "<|begin_of_text|>a<|eot_id|>", "中文'S'll 123456", "a\u0301\u200d👍🏽"} {
		f.Add(s)
	}
	tk := loadModel(f, "llama3")
	sp := loadModel(f, "llama2")
	f.Fuzz(func(t *testing.T, s string) {
		ids := tk.Encode(s, true)
		if got, want := tk.Decode(ids[1:]), validUTF8(s); got != want {
			t.Errorf("Decode(Encode(%q)) = %q, want %q", s, got, want)
		}
		sp.Decode(sp.Encode(s, true))
	})
}
