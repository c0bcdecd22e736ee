package sim

// Vocabularies the writer draws from: common English prose, words a
// reasoning trace leans on, and identifiers for code blocks.
var proseWords = []string{
	"the", "a", "of", "to", "and", "in", "is", "that", "for", "it", "as", "with",
	"this", "on", "be", "by", "are", "or", "can", "from", "an", "which", "not",
	"we", "each", "when", "its", "value", "function", "data", "system", "model",
	"result", "request", "server", "process", "time", "number", "first", "then",
	"because", "every", "should", "would", "could", "into", "between", "while",
	"simple", "small", "large", "new", "other", "same", "different", "important",
	"example", "case", "way", "part", "method", "approach", "problem", "answer",
	"question", "step", "list", "table", "file", "line", "word", "token", "memory",
	"cache", "error", "state", "input", "output", "user", "service", "network",
	"layer", "graph", "node", "edge", "query", "index", "record", "field", "type",
	"returns", "uses", "keeps", "makes", "gives", "takes", "reads", "writes",
	"shows", "means", "depends", "changes", "follows", "holds", "runs", "stops",
	"quickly", "often", "usually", "also", "only", "still", "already", "instead",
	"however", "therefore", "finally", "carefully", "directly", "clearly",
	"history", "river", "city", "language", "music", "energy", "light", "water",
	"market", "price", "growth", "policy", "health", "science", "theory", "proof",
	"equation", "sum", "set", "order", "length", "size", "rate", "level", "range",
}

var reasoningOpeners = []string{
	"Let", "So", "Wait", "Hmm", "Okay", "First", "Then", "Now", "Actually",
	"Alternatively", "Check", "But", "Maybe", "Right",
}

var codeIdents = []string{
	"i", "n", "x", "y", "err", "buf", "key", "val", "items", "count", "total",
	"result", "node", "left", "right", "size", "ctx", "req", "resp", "out",
}

// codeLines are templates whose "@" marks take an identifier.
var codeLines = []string{
	"\nfunc @(@ int) (int, error) {",
	"\n\tfor _, @ := range @ {",
	"\n\tif @ != nil {",
	"\n\t\treturn 0, @",
	"\n\t@ = append(@, @)",
	"\n\t@ += @[i] * 2",
	"\n\t}",
	"\n\treturn @, nil",
	"\n}",
}
