// Package specs decodes and validates eaglet's YAML experiment specs: every
// value keeps its file position, every problem is reported at once, and
// environment variables are expanded docker-compose style.
package specs

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"

	"gopkg.in/yaml.v3"
)

// CurrentVersion is the only spec version this binary reads.
const CurrentVersion = 1

// Spec is one experiment: datasets, endpoints and a DAG of stages.
type Spec struct {
	// Path is the spec file; relative paths inside the spec are resolved
	// against its directory.
	Path      string
	Version   int
	Name      string
	State     string
	Vars      []Var
	Datasets  []*Dataset
	Endpoints []*Endpoint
	Stages    []*Stage
	// AllowOutside lets the spec write files (outputs, the state store)
	// outside its own directory; without it such a path is an error, since
	// a spec from elsewhere is input too.
	AllowOutside bool
	// StatePos is where `state:` is set, or 1:1 when it is the default.
	StatePos Pos

	lines []string
	// secrets are the values Redact and Conceal hide, longest first.
	secrets []secret
	vars    any
}

// Dataset is one input dataset.
type Dataset struct {
	Name   string
	Source string `yaml:"source"`
	Format string `yaml:"format" default:"auto"`
	// OnError is "" (fail) when left out, as the loader's fingerprint has
	// always held it.
	OnError string            `yaml:"on_error" enum:"fail|skip"`
	Mapping map[string]string `yaml:"mapping"`
	// EstCompletionTokens is the expected answer length, for plan estimates
	// and budgets before anything has been measured.
	EstCompletionTokens int `yaml:"est_completion_tokens"`
	EstPromptTokens     int `yaml:"est_prompt_tokens"`
	// Weight scales the dataset's records in a merge; 0 leaves them out.
	Weight float64 `yaml:"weight" default:"1"`
	Pos    Pos
}

// Endpoint is an inference server (or the built-in simulator).
type Endpoint struct {
	Name    string
	API     string            `yaml:"api"`
	URLs    []string          `yaml:"urls"`
	Model   string            `yaml:"model"`
	APIKey  string            `yaml:"api_key"`
	Headers map[string]string `yaml:"headers"`
	// Concurrency caps requests in flight over every stage using the
	// endpoint: a number, or auto to adapt to the server.
	Concurrency Concurrency `yaml:"concurrency"`
	// MaxConcurrency bounds concurrency: auto (default 1024).
	MaxConcurrency int `yaml:"max_concurrency"`
	// Context is the model's context window in tokens, when set: records
	// whose tokenized prompt does not fit are skipped rather than sent.
	Context int `yaml:"context"`
	// TokensPerSecond is the endpoint's aggregate output throughput, used by
	// plan to estimate wall time.
	TokensPerSecond float64 `yaml:"tokens_per_second"`
	// Price is in US dollars per million tokens, used by plan for cost.
	Price *Price `yaml:"price"`
	// Options are the API's own settings, decoded by its backend.
	Options *yaml.Node `yaml:"options"`
	// Launch, instead of URLs, says how eaglet starts the endpoint's
	// servers itself; the launcher decodes and checks it (RegisterLaunch).
	Launch *yaml.Node `yaml:"launch"`
	Pos    Pos

	node *yaml.Node // the endpoint's mapping, for LaunchKeyPos
}

// Price is a per-million-token price.
type Price struct {
	Input  float64 `yaml:"input"`
	Output float64 `yaml:"output"`
}

// Stage is one node of the DAG, expanded into one instance per dataset when
// Foreach is "datasets".
type Stage struct {
	Name    string   `yaml:"name"`
	Uses    string   `yaml:"uses"`
	Needs   []string `yaml:"needs"`
	Foreach string   `yaml:"foreach"`
	// Concurrency is how many records an instance works on at once; it
	// never changes results, so editing it reruns nothing.
	Concurrency Expr `yaml:"concurrency" eval:"int"`
	// With holds the stage kind's own options, decoded by the engine.
	With *yaml.Node `yaml:"with"`
	Pos  Pos

	node *yaml.Node // the stage's mapping, for KeyPos
}

type topLevel struct {
	Version   int        `yaml:"version"`
	Name      string     `yaml:"name"`
	State     string     `yaml:"state"`
	Vars      *yaml.Node `yaml:"vars"`
	Datasets  *yaml.Node `yaml:"datasets"`
	Endpoints *yaml.Node `yaml:"endpoints"`
	Stages    []*Stage   `yaml:"stages"`
	// AllowOutside is Spec.AllowOutside.
	AllowOutside bool `yaml:"allow_outside"`
	Pos          Pos
}

var nameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.-]*$`)

// Load reads and validates the spec at path.
func Load(path string, lookup LookupEnv) (*Spec, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	return Parse(path, src, lookup)
}

// Parse decodes and validates a spec; the error lists every problem found.
// Unless the YAML itself is broken the spec is returned alongside the error,
// for callers that check more (stage options) before reporting.
func Parse(path string, src []byte, lookup LookupEnv) (*Spec, error) {
	// YAML breaks lines at CR as well as LF; so must the line numbers and
	// snippets of errors (a file saved with old Mac line endings).
	src = bytes.ReplaceAll(bytes.ReplaceAll(src, []byte("\r\n"), []byte("\n")), []byte("\r"), []byte("\n"))
	errs := newErrorList(path, src)
	var doc yaml.Node
	if err := yaml.Unmarshal(src, &doc); err != nil {
		quoted, refs := quoteFlowRefs(src)
		if len(refs) == 0 || yaml.Unmarshal(quoted, &doc) != nil {
			return nil, yamlSyntaxError(path, src, err)
		}
		unquoteRefs(&doc, refs)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		errs.at(1, 1, "the spec is empty; start with `version: 1`")
		return nil, errs.result()
	}
	if n, _ := aliasBomb(&doc); n != nil {
		errs.node(n, "YAML aliases here expand the spec past %d values (an alias bomb?); write the values out or use fewer aliases", maxExpanded)
		return nil, errs.result()
	}
	mergeKeys(&doc, errs)
	secrets := map[string]string{}
	interpolate(&doc, lookup, errs, secrets)

	var top topLevel
	d := &decoder{errs: errs}
	d.decode(doc.Content[0], reflect.ValueOf(&top).Elem())

	s := &Spec{Path: path, Version: top.Version, Name: top.Name, State: top.State, AllowOutside: top.AllowOutside, lines: errs.lines}
	root := doc.Content[0]
	switch {
	case top.Version == 0 && valueNode(root, "version") != nil:
		// A value of the wrong type, already reported where it is.
	case top.Version == 0:
		errs.node(root, "missing `version: %d` at the top of the spec", CurrentVersion)
	case top.Version != CurrentVersion:
		errs.node(valueNode(root, "version"), "spec version %d is not supported; this eaglet reads version %d", top.Version, CurrentVersion)
	}
	if top.Name == "" {
		errs.node(root, "missing `name:`; it names the experiment in logs and outputs")
	} else if !nameRE.MatchString(top.Name) {
		errs.node(valueNode(root, "name"), "name %q: use letters, digits, _, - and .", top.Name)
	}
	if s.State == "" {
		s.State = filepath.Join(".eaglet", top.Name+".db")
	}
	if !filepath.IsAbs(s.State) {
		// Kept relative to where eaglet runs, as the user reads it in
		// messages; the store holds no path, so nothing depends on it.
		s.State = filepath.Join(filepath.Dir(s.Path), s.State)
	}
	s.StatePos = Pos{File: path, Line: 1, Col: 1}
	if n := valueNode(root, "state"); n != nil {
		s.StatePos = Pos{File: path, Line: n.Line, Col: n.Column}
	}

	s.Vars = decodeVars(top.Vars, errs)
	s.vars = varsValue(s.Vars)
	s.Datasets = decodeNamed[Dataset](d, top.Datasets, "datasets", func(v *Dataset, name string, n *yaml.Node) {
		v.Name = name
		// The spec's datasets are the values used: defaults fill them in
		// place, and what no dataset may be written is reported here.
		ds := reflect.ValueOf(v).Elem()
		fillDefaults(ds, schemaOf(ds.Type()), n)
		for _, err := range checkWritten(ds, schemaOf(ds.Type()), n, path, "dataset "+name, "") {
			errs.add(err)
		}
		checkDataset(v, n, errs)
	})
	s.Endpoints = decodeNamed[Endpoint](d, top.Endpoints, "endpoints", func(v *Endpoint, name string, n *yaml.Node) { v.Name = name; v.node = n })
	s.secrets = collectSecrets(secrets, s.Endpoints)
	for _, ds := range s.Datasets {
		if ds.Source != "" {
			if _, err := os.Stat(s.Resolve(ds.Source)); err != nil {
				errs.at(ds.Pos.Line, ds.Pos.Col, "dataset %s: source %s: %v", ds.Name, ds.Source, errors.Unwrap(err))
			}
		}
	}
	for _, ep := range s.Endpoints {
		checkEndpoint(ep, errs)
		checkLaunch(s, ep, errs)
	}
	_, seq := mapEntry(root, "stages")
	if seq == nil || seq.Kind != yaml.SequenceNode || len(seq.Content) != len(top.Stages) {
		seq = nil
	}
	for i, st := range top.Stages {
		if st == nil {
			// "- " with nothing after it: nothing to check further.
			pos := Pos{Line: 1, Col: 1}
			if seq != nil {
				pos = Pos{Line: seq.Content[i].Line, Col: seq.Content[i].Column}
			}
			errs.at(pos.Line, pos.Col, "empty stage: give it a name, uses and needs, or remove the dash")
			continue
		}
		if seq != nil {
			st.node = seq.Content[i]
		}
		s.Stages = append(s.Stages, st)
	}
	checkStages(s, errs)
	// The spec is returned even when invalid so that stage options can be
	// checked too and every problem reported in one go.
	return s, errs.result()
}

func yamlSyntaxError(path string, src []byte, err error) error {
	// yaml.v3 reports "yaml: line N: msg"; keep its line, name the file.
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	var line int
	if _, scanErr := fmt.Sscanf(msg, "line %d:", &line); scanErr != nil {
		return &Error{Pos: Pos{File: path}, Msg: "YAML syntax: " + msg}
	}
	msg = strings.TrimSpace(msg[strings.Index(msg, ":")+1:])
	e := &Error{Pos: Pos{File: path, Line: line, Col: 1}, Msg: "YAML syntax: " + msg}
	if lines := strings.Split(string(src), "\n"); line >= 1 && line <= len(lines) {
		text := lines[line-1]
		if i := strings.IndexByte(text, '\t'); i >= 0 {
			// The usual cause, and one the eye does not see.
			e.Pos.Col = i + 1
			e.Msg += "; a tab: YAML indents with spaces only"
		}
		e.Snippet = strings.ReplaceAll(text, "\t", " ")
	}
	return e
}

// decodeNamed decodes a mapping of names to T, keeping the file's order.
func decodeNamed[T any](d *decoder, n *yaml.Node, what string, named func(v *T, name string, n *yaml.Node)) []*T {
	if n == nil {
		return nil
	}
	if n.Kind != yaml.MappingNode {
		d.errs.node(n, "%s must be a mapping of names to settings", what)
		return nil
	}
	var out []*T
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := n.Content[i]
		if !nameRE.MatchString(k.Value) {
			d.errs.node(k, "%s name %q: use letters, digits, _, - and .", what, k.Value)
		}
		v := new(T)
		d.decode(n.Content[i+1], reflect.ValueOf(v).Elem())
		named(v, k.Value, n.Content[i+1])
		out = append(out, v)
	}
	return out
}

func checkDataset(ds *Dataset, n *yaml.Node, errs *errorList) {
	if _, ok := written(n, "source"); !ok {
		errs.at(ds.Pos.Line, ds.Pos.Col, "dataset %s: missing `source:` (a file path)", ds.Name)
	}
	if ds.EstCompletionTokens < 0 || ds.EstPromptTokens < 0 || ds.Weight < 0 {
		errs.at(ds.Pos.Line, ds.Pos.Col, "dataset %s: estimates and weight cannot be negative", ds.Name)
	}
}

// checkEndpoint checks an endpoint against the registered APIs, decoding
// its options so that a misspelt one is reported whether a stage uses the
// endpoint or not.
func checkEndpoint(ep *Endpoint, errs *errorList) {
	names := APINames()
	api, ok := LookupAPI(ep.API)
	switch {
	case ep.API == "":
		errs.at(ep.Pos.Line, ep.Pos.Col, "endpoint %s: missing `api:` (one of %s)", ep.Name, strings.Join(names, ", "))
	case !ok && len(names) > 0:
		errs.at(ep.Pos.Line, ep.Pos.Col, "endpoint %s: unknown api %q%s; use one of %s", ep.Name, ep.API, suggest(ep.API, names), strings.Join(names, ", "))
	case !ok:
		// A program built without backends (specs' own tests) knows no API,
		// so it cannot tell a known one from a misspelt one: it checks none.
	default:
		if api.NeedsURLs && len(ep.URLs) == 0 && ep.Launch == nil {
			errs.at(ep.Pos.Line, ep.Pos.Col, "endpoint %s: api %s needs `urls:` (or `launch:`, for eaglet to start its servers)", ep.Name, ep.API)
		}
		if ep.Options != nil {
			o := reflect.ValueOf(api.Options()).Elem()
			(&decoder{errs: errs}).decode(ep.Options, o)
			for _, err := range checkWritten(o, schemaOf(o.Type()), ep.Options, errs.file, "endpoint "+ep.Name, "") {
				errs.add(err)
			}
			if c, ok := o.Addr().Interface().(OptionsChecker); ok {
				for _, p := range c.Problems() {
					n := ep.Options
					for _, key := range p.Path {
						if _, v := mapEntry(n, key); v != nil {
							n = v
						}
					}
					errs.at(n.Line, n.Column, "endpoint %s: %s", ep.Name, p.Msg)
				}
			}
		}
	}
	for _, u := range ep.URLs {
		if api.NeedsURLs && !strings.HasPrefix(u, "http://") && !strings.HasPrefix(u, "https://") {
			errs.at(ep.Pos.Line, ep.Pos.Col, "endpoint %s: url %q must start with http:// or https://", ep.Name, u)
		}
	}
	if ep.Context < 0 {
		errs.at(ep.Pos.Line, ep.Pos.Col, "endpoint %s: context cannot be negative", ep.Name)
	}
	if ep.Concurrency.N < 0 || ep.MaxConcurrency < 0 {
		errs.at(ep.Pos.Line, ep.Pos.Col, "endpoint %s: concurrency cannot be negative", ep.Name)
	}
	if ep.Concurrency.N > MaxConcurrency || ep.MaxConcurrency > MaxConcurrency {
		errs.at(ep.Pos.Line, ep.Pos.Col, "endpoint %s: concurrency %d is more than one machine can keep open to a server (at most %d); a real server queues long before that", ep.Name, max(ep.Concurrency.N, ep.MaxConcurrency), MaxConcurrency)
	}
}

func checkStages(s *Spec, errs *errorList) {
	if len(s.Stages) == 0 {
		errs.at(1, 1, "no stages: add a `stages:` list (see specs/examples/quickstart.yaml)")
		return
	}
	byName := map[string]*Stage{}
	var names []string
	for _, st := range s.Stages {
		switch {
		case st.Name == "":
			errs.at(st.Pos.Line, st.Pos.Col, "stage without `name:`")
			continue
		case !nameRE.MatchString(st.Name):
			errs.at(st.Pos.Line, st.Pos.Col, "stage name %q: use letters, digits, _, - and .", st.Name)
		case byName[st.Name] != nil:
			errs.at(st.Pos.Line, st.Pos.Col, "stage %q is defined twice (first at line %d)", st.Name, byName[st.Name].Pos.Line)
			continue
		}
		if st.Uses == "" {
			errs.at(st.Pos.Line, st.Pos.Col, "stage %s: missing `uses:` (the stage kind)", st.Name)
		}
		if st.Foreach != "" && st.Foreach != "datasets" {
			p := st.KeyPos("foreach")
			errs.at(p.Line, p.Col, "stage %s: foreach is %q; the only value is datasets", st.Name, st.Foreach)
		}
		byName[st.Name] = st
		names = append(names, st.Name)
	}
	for _, st := range s.Stages {
		for _, n := range st.Needs {
			if byName[n] == nil {
				errs.at(st.Pos.Line, st.Pos.Col, "stage %s needs unknown stage %q%s", st.Name, n, suggest(n, names))
			}
		}
	}
	if cyc := findCycle(s.Stages, byName); cyc != nil {
		st := byName[cyc[0]]
		errs.at(st.Pos.Line, st.Pos.Col, "stages form a cycle: %s", strings.Join(cyc, " -> "))
	}
}

// findCycle returns one cycle of needs as stage names (first repeated last).
func findCycle(stages []*Stage, byName map[string]*Stage) []string {
	const (
		unseen = iota
		active
		finished
	)
	state := map[string]int{}
	var stack []string
	var visit func(name string) []string
	visit = func(name string) []string {
		state[name] = active
		stack = append(stack, name)
		if st := byName[name]; st != nil {
			for _, n := range st.Needs {
				if byName[n] == nil {
					continue
				}
				switch state[n] {
				case active:
					for i, s := range stack {
						if s == n {
							return append(append([]string(nil), stack[i:]...), n)
						}
					}
				case unseen:
					if c := visit(n); c != nil {
						return c
					}
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[name] = finished
		return nil
	}
	for _, st := range stages {
		if state[st.Name] == unseen && st.Name != "" {
			if c := visit(st.Name); c != nil {
				return c
			}
		}
	}
	return nil
}

// Resolve makes a path from the spec relative to the spec's directory.
func (s *Spec) Resolve(p string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	// Absolute, so that what is stored about a file (a merge's output, a
	// loader's fingerprint) means the same file from any working directory.
	dir, err := filepath.Abs(filepath.Dir(s.Path))
	if err != nil {
		dir = filepath.Dir(s.Path)
	}
	return filepath.Join(dir, p)
}

// Decode decodes a stage's or endpoint's options node into dst (a pointer to
// a tagged struct), reporting every unknown key and bad value with its position.
func (s *Spec) Decode(n *yaml.Node, dst any) error {
	errs := &errorList{file: s.Path, lines: s.lines}
	if n != nil {
		(&decoder{errs: errs}).decode(n, reflect.ValueOf(dst).Elem())
	}
	return errs.result()
}

// Errorf returns an *Error at pos with the spec line as snippet.
func (s *Spec) Errorf(pos Pos, format string, args ...any) error {
	e := &Error{Pos: pos, Msg: fmt.Sprintf(format, args...)}
	if pos.Line >= 1 && pos.Line <= len(s.lines) {
		e.Snippet = strings.ReplaceAll(s.lines[pos.Line-1], "\t", " ")
	}
	return e
}

// WithSnippet fills in the source line of a spec *Error that lacks one.
func (s *Spec) WithSnippet(err error) error {
	if e, ok := err.(*Error); ok && e.Snippet == "" && e.Pos.Line >= 1 && e.Pos.Line <= len(s.lines) {
		c := *e
		c.Snippet = strings.ReplaceAll(s.lines[e.Pos.Line-1], "\t", " ")
		return &c
	}
	return err
}

// Env returns the environment of instance-level expressions (caps, budgets,
// concurrency): the spec's vars, the dataset an instance works on (zero for
// none), what is known of its input, the endpoints by name, and the
// latest evaluation's acceptance (zero here: the engine sets it from the
// store). It is a map so that vars keep their own types and a typo in a
// var name fails to compile.
func (s *Spec) Env(ds *Dataset, in InputInfo) map[string]any {
	info := DatasetInfo{}
	if ds != nil {
		info = DatasetInfo{Name: ds.Name, Source: ds.Source, Format: ds.Format,
			EstCompletionTokens: ds.EstCompletionTokens, EstPromptTokens: ds.EstPromptTokens, Weight: ds.Weight}
	}
	return map[string]any{"vars": s.vars, "dataset": info, "input": in, "endpoints": endpointsValue(s.Endpoints),
		"acceptance": AcceptanceInfo{Dataset: map[string]float64{}, Context: map[string]float64{}}}
}

// VarsValue returns the vars as a typed value for expression environments.
func (s *Spec) VarsValue() any { return s.vars }

// Dataset returns the named dataset or nil.
func (s *Spec) Dataset(name string) *Dataset {
	for _, d := range s.Datasets {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// Endpoint returns the named endpoint or nil.
func (s *Spec) Endpoint(name string) *Endpoint {
	for _, e := range s.Endpoints {
		if e.Name == name {
			return e
		}
	}
	return nil
}

// MaxConcurrency is the most requests or records in flight a spec may ask
// for: one client's TCP connections to a server run out at about 64k (the
// ephemeral ports), and far fewer saturate any inference server.
const MaxConcurrency = 65_536

// Concurrency is a number of requests, or Auto.
type Concurrency struct {
	N    int
	Auto bool
}

// UnmarshalYAML accepts a whole number or the word auto.
func (c *Concurrency) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode && n.Value == "auto" {
		c.Auto = true
		return nil
	}
	return n.Decode(&c.N)
}
