package tokenizer

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Config is what tokenizer_config.json says about special tokens and chat
// templates.
type Config struct {
	BOSToken string
	EOSToken string
	PadToken string
	UnkToken string
	// AddBOSToken and AddEOSToken are the file's flags, nil when absent.
	AddBOSToken *bool
	AddEOSToken *bool
	// ChatTemplate is the default chat template; ChatTemplates holds every
	// named one when the file gives a list ("default", "tool_use", ...).
	ChatTemplate  string
	ChatTemplates map[string]string
	// AddedTokens maps each special token of added_tokens_decoder to its
	// id: the special tokens of a tiktoken model such as Kimi-K2.
	AddedTokens map[string]int
	// EOSTokenIDs are generation_config.json's eos_token_id (one id or a
	// list): every id the model stops on, which may be more than the
	// tokenizer's one eos_token (Llama 3: <|end_of_text|>, <|eom_id|>,
	// <|eot_id|>).
	EOSTokenIDs []int
}

// parseGenerationConfig reads eos_token_id from generation_config.json.
func parseGenerationConfig(data []byte) ([]int, error) {
	var g struct {
		EOSTokenID json.RawMessage `json:"eos_token_id"`
	}
	if err := json.Unmarshal(data, &g); err != nil {
		return nil, err
	}
	if isNull(g.EOSTokenID) {
		return nil, nil
	}
	var one int
	if err := json.Unmarshal(g.EOSTokenID, &one); err == nil {
		return []int{one}, nil
	}
	var many []int
	if err := json.Unmarshal(g.EOSTokenID, &many); err != nil {
		return nil, fmt.Errorf("eos_token_id: neither an id nor a list of ids")
	}
	return many, nil
}

type hfConfig struct {
	BOSToken     json.RawMessage `json:"bos_token"`
	EOSToken     json.RawMessage `json:"eos_token"`
	PadToken     json.RawMessage `json:"pad_token"`
	UnkToken     json.RawMessage `json:"unk_token"`
	AddBOSToken  *bool           `json:"add_bos_token"`
	AddEOSToken  *bool           `json:"add_eos_token"`
	ChatTemplate json.RawMessage `json:"chat_template"`
	AddedTokens  map[string]struct {
		Content string `json:"content"`
		Special bool   `json:"special"`
	} `json:"added_tokens_decoder"`
}

// parseConfig decodes tokenizer_config.json.
func parseConfig(data []byte) (Config, error) {
	var h hfConfig
	if err := json.Unmarshal(data, &h); err != nil {
		return Config{}, err
	}
	var c Config
	var err error
	for _, f := range []struct {
		raw json.RawMessage
		dst *string
		key string
	}{{h.BOSToken, &c.BOSToken, "bos_token"}, {h.EOSToken, &c.EOSToken, "eos_token"}, {h.PadToken, &c.PadToken, "pad_token"}, {h.UnkToken, &c.UnkToken, "unk_token"}} {
		if *f.dst, err = tokenContent(f.raw); err != nil {
			return Config{}, fmt.Errorf("%s: %w", f.key, err)
		}
	}
	c.AddBOSToken, c.AddEOSToken = h.AddBOSToken, h.AddEOSToken
	for key, a := range h.AddedTokens {
		id, err := strconv.Atoi(key)
		if err != nil {
			return Config{}, fmt.Errorf("added_tokens_decoder: id %q is not a number", key)
		}
		if a.Special {
			if c.AddedTokens == nil {
				c.AddedTokens = map[string]int{}
			}
			c.AddedTokens[a.Content] = id
		}
	}
	if isNull(h.ChatTemplate) {
		return c, nil
	}
	if err := json.Unmarshal(h.ChatTemplate, &c.ChatTemplate); err == nil {
		return c, nil
	}
	var named []struct {
		Name     string `json:"name"`
		Template string `json:"template"`
	}
	if err := json.Unmarshal(h.ChatTemplate, &named); err != nil {
		return Config{}, fmt.Errorf("chat_template: neither a string nor a list of named templates")
	}
	c.ChatTemplates = map[string]string{}
	for _, n := range named {
		c.ChatTemplates[n.Name] = n.Template
	}
	c.ChatTemplate = c.ChatTemplates["default"]
	return c, nil
}

// tokenContent reads a special token given as a string or as an AddedToken
// object with "content".
func tokenContent(raw json.RawMessage) (string, error) {
	if isNull(raw) {
		return "", nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var obj struct {
		Content string `json:"content"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return "", fmt.Errorf("neither a string nor an object with content")
	}
	return obj.Content, nil
}
