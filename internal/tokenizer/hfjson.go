package tokenizer

import "encoding/json"

// The shape of a Hugging Face tokenizer.json, decoded as plain data before
// anything is built from it. Components stay raw until their "type" is read,
// so an unsupported one is named rather than half-decoded.
type hfFile struct {
	AddedTokens   []hfAddedToken  `json:"added_tokens"`
	Normalizer    json.RawMessage `json:"normalizer"`
	PreTokenizer  json.RawMessage `json:"pre_tokenizer"`
	PostProcessor json.RawMessage `json:"post_processor"`
	Decoder       json.RawMessage `json:"decoder"`
	Model         hfModel         `json:"model"`
}

type hfAddedToken struct {
	ID         int    `json:"id"`
	Content    string `json:"content"`
	SingleWord bool   `json:"single_word"`
	LStrip     bool   `json:"lstrip"`
	RStrip     bool   `json:"rstrip"`
	Normalized bool   `json:"normalized"`
	Special    bool   `json:"special"`
}

type hfModel struct {
	Type string `json:"type"`
	// RawVocab is read by parseVocab into Vocab once the type is known
	// to be BPE (other models spell their vocabulary differently).
	RawVocab                json.RawMessage `json:"vocab"`
	Vocab                   map[string]int  `json:"-"`
	Merges                  json.RawMessage `json:"merges"`
	UnkToken                *string         `json:"unk_token"`
	ContinuingSubwordPrefix *string         `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string         `json:"end_of_word_suffix"`
	FuseUnk                 bool            `json:"fuse_unk"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	Dropout                 *float64        `json:"dropout"`
}

// hfComponent is any normalizer, pre-tokenizer, post-processor or decoder:
// the union of the fields the supported types use.
type hfComponent struct {
	Type string `json:"type"`

	Normalizers   []json.RawMessage `json:"normalizers"`
	PreTokenizers []json.RawMessage `json:"pretokenizers"`
	Processors    []json.RawMessage `json:"processors"`
	Decoders      []json.RawMessage `json:"decoders"`

	Pattern  hfPattern `json:"pattern"`
	Content  string    `json:"content"`
	Prepend  string    `json:"prepend"`
	Behavior string    `json:"behavior"`
	Invert   bool      `json:"invert"`

	AddPrefixSpace bool  `json:"add_prefix_space"`
	UseRegex       *bool `json:"use_regex"`

	IndividualDigits bool   `json:"individual_digits"`
	Replacement      string `json:"replacement"`
	PrependScheme    string `json:"prepend_scheme"`
	Split            *bool  `json:"split"`
	Start            int    `json:"start"`
	Stop             int    `json:"stop"`
	Left             bool   `json:"strip_left"`
	Right            bool   `json:"strip_right"`

	Single        []hfTemplatePiece            `json:"single"`
	SpecialTokens map[string]hfTemplateSpecial `json:"special_tokens"`
	Cls           []json.RawMessage            `json:"cls"`
	Sep           []json.RawMessage            `json:"sep"`
}

type hfPattern struct {
	String *string `json:"String"`
	Regex  *string `json:"Regex"`
}

type hfTemplatePiece struct {
	SpecialToken *struct {
		ID string `json:"id"`
	} `json:"SpecialToken"`
	Sequence *struct {
		ID string `json:"id"`
	} `json:"Sequence"`
}

type hfTemplateSpecial struct {
	IDs []int `json:"ids"`
}

// isNull reports whether a raw component is absent or JSON null.
func isNull(raw json.RawMessage) bool {
	return len(raw) == 0 || string(raw) == "null"
}
