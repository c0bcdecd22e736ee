package tokenizer

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"golang.org/x/text/unicode/norm"
)

// A normalizer rewrites a segment of text before pre-tokenization.
type normalizer func(string) string

// buildNormalizer builds a normalizer from its tokenizer.json form; nil
// means the identity.
func buildNormalizer(raw json.RawMessage) (normalizer, error) {
	if isNull(raw) {
		return nil, nil
	}
	var c hfComponent
	if err := json.Unmarshal(raw, &c); err != nil {
		return nil, fmt.Errorf("normalizer: %w", err)
	}
	switch c.Type {
	case "Sequence":
		var steps []normalizer
		for _, r := range c.Normalizers {
			n, err := buildNormalizer(r)
			if err != nil {
				return nil, err
			}
			if n != nil {
				steps = append(steps, n)
			}
		}
		switch len(steps) {
		case 0:
			return nil, nil
		case 1:
			return steps[0], nil
		}
		return func(s string) string {
			for _, n := range steps {
				s = n(s)
			}
			return s
		}, nil
	case "NFC":
		return norm.NFC.String, nil
	case "NFD":
		return norm.NFD.String, nil
	case "NFKC":
		return norm.NFKC.String, nil
	case "NFKD":
		return norm.NFKD.String, nil
	case "Lowercase":
		return strings.ToLower, nil
	case "Prepend":
		p := c.Prepend
		return func(s string) string {
			if s == "" {
				return s
			}
			return p + s
		}, nil
	case "Replace":
		with := c.Content
		switch {
		case c.Pattern.String != nil:
			old := *c.Pattern.String
			return func(s string) string { return strings.ReplaceAll(s, old, with) }, nil
		case c.Pattern.Regex != nil:
			rx, err := regexp.Compile(*c.Pattern.Regex)
			if err != nil {
				return nil, fmt.Errorf("normalizer Replace: unsupported regex %q: %v", *c.Pattern.Regex, err)
			}
			return func(s string) string { return rx.ReplaceAllLiteralString(s, with) }, nil
		}
		return nil, fmt.Errorf("normalizer Replace: pattern has neither String nor Regex")
	case "Strip":
		left, right := c.Left, c.Right
		return func(s string) string {
			if left {
				s = strings.TrimLeftFunc(s, isWhiteSpace)
			}
			if right {
				s = strings.TrimRightFunc(s, isWhiteSpace)
			}
			return s
		}, nil
	}
	return nil, fmt.Errorf("normalizer: unsupported type %q", c.Type)
}

func isWhiteSpace(r rune) bool { return class(r)&cS != 0 }
