package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Source kinds, lowest precedence first.
const (
	SourceDefault = "default"
	SourceUser    = "user"
	SourceProject = "project"
	SourceEnv     = "env"
)

// Source says where one value came from.
type Source struct {
	Kind string `json:"kind"`           // default, user, project or env
	File string `json:"file,omitempty"` // for user and project
	Line int    `json:"line,omitempty"`
	Env  string `json:"env,omitempty"` // the variable, for env
}

func (s Source) String() string {
	switch s.Kind {
	case SourceUser, SourceProject:
		if s.Line == 0 {
			return s.File
		}
		return fmt.Sprintf("%s:%d", s.File, s.Line)
	case SourceEnv:
		return "$" + s.Env
	default:
		return "default"
	}
}

// Sources records the source of every leaf value by dotted key, e.g.
// "run.jobs" or "models.providers.anthropic.base_url".
type Sources struct {
	m     map[string]Source
	order []string // keys in the order they were first recorded
}

func newSources() *Sources { return &Sources{m: map[string]Source{}} }

func (s *Sources) set(key string, src Source) {
	if _, ok := s.m[key]; !ok {
		s.order = append(s.order, key)
	}
	s.m[key] = src
}

// Lookup returns where the value at a dotted key came from.
func (s *Sources) Lookup(key string) (Source, bool) {
	src, ok := s.m[key]
	return src, ok
}

// Of returns Lookup's source as text ("default", "file:line", "$VAR"), or
// "" for an unknown key.
func (s *Sources) Of(key string) string {
	if src, ok := s.m[key]; ok {
		return src.String()
	}
	return ""
}

// Keys returns every recorded key, sorted.
func (s *Sources) Keys() []string {
	keys := append([]string(nil), s.order...)
	sort.Strings(keys)
	return keys
}

// ErrInvalid is matched by every *Error.
var ErrInvalid = errors.New("invalid configuration")

// Error is one configuration problem, located where the bad value came
// from.
type Error struct {
	Source Source
	Key    string
	Msg    string
}

func (e *Error) Error() string {
	loc := e.Source.String()
	if e.Source.Kind == SourceEnv {
		loc = "environment " + loc
	}
	if e.Key == "" {
		return fmt.Sprintf("%s: %s", loc, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", loc, e.Key, e.Msg)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *Error) Is(target error) bool { return target == ErrInvalid }

// UserFile is the user's config file, or "" without a user config dir.
func UserFile(getenv func(string) string) string {
	if d := UserDir(getenv); d != "" {
		return filepath.Join(d, "config.yaml")
	}
	return ""
}

// ProjectFile is a project's config file.
func ProjectFile(projectRoot string) string {
	return filepath.Join(projectRoot, ".sluice", "config.yaml")
}

// Load builds the effective configuration: built-in defaults, then the
// user's $XDG_CONFIG_HOME/sluice/config.yaml, then the project's
// .sluice/config.yaml, then the environment (see EnvVars). Missing files
// are fine. Unknown keys, wrong types and invalid values are errors (all of
// them, joined; each matches ErrInvalid) naming the file and line.
// projectRoot "" skips the project file.
func Load(projectRoot string, getenv func(string) string) (*Config, *Sources, error) {
	cfg := Defaults()
	src := newSources()
	recordDefaults(reflect.ValueOf(cfg).Elem(), nil, src)

	var errs []error
	if f := UserFile(getenv); f != "" {
		errs = append(errs, layerFile(cfg, src, f, SourceUser)...)
	}
	if projectRoot != "" {
		errs = append(errs, layerFile(cfg, src, ProjectFile(projectRoot), SourceProject)...)
	}
	errs = append(errs, applyEnv(cfg, src, getenv)...)
	if len(errs) == 0 {
		errs = validate(cfg, src)
	}
	if len(errs) > 0 {
		return nil, nil, errors.Join(errs...)
	}
	return cfg, src, nil
}

// recordDefaults marks every leaf of the defaults as "default".
func recordDefaults(v reflect.Value, segs []string, src *Sources) {
	switch v.Kind() {
	case reflect.Struct:
		t := v.Type()
		for i := range t.NumField() {
			recordDefaults(v.Field(i), appendSeg(segs, yamlName(t.Field(i))), src)
		}
	case reflect.Map:
		for _, k := range sortedKeys(v) {
			recordDefaults(v.MapIndex(k), appendSeg(segs, k.String()), src)
		}
	default:
		src.set(strings.Join(segs, "."), Source{Kind: SourceDefault})
	}
}

func appendSeg(segs []string, s string) []string {
	return append(segs[:len(segs):len(segs)], s)
}

func sortedKeys(v reflect.Value) []reflect.Value {
	keys := v.MapKeys()
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}

func yamlName(f reflect.StructField) string {
	name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
	if name == "" {
		name = strings.ToLower(f.Name)
	}
	return name
}

// leaf is a value a file sets.
type leaf struct {
	segs []string
	node *yaml.Node
	typ  reflect.Type
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// layerFile applies one YAML file over cfg.
func layerFile(cfg *Config, src *Sources, path, kind string) []error {
	at := func(line int) Source { return Source{Kind: kind, File: path, Line: line} }
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		msg := err.Error()
		var pe *fs.PathError
		if errors.As(err, &pe) {
			msg = pe.Err.Error()
		}
		if info, serr := os.Stat(path); serr == nil && info.IsDir() {
			msg = "is a directory; the configuration must be a YAML file"
		}
		return []error{&Error{Source: Source{Kind: kind, File: path}, Msg: msg}}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		msg := err.Error()
		line := 0
		if m := yamlLine.FindStringSubmatch(msg); m != nil {
			line, _ = strconv.Atoi(m[1])
			msg = m[2]
		}
		return []error{&Error{Source: at(line), Msg: "invalid YAML: " + msg}}
	}
	if doc.Kind == 0 || len(doc.Content) == 0 {
		return nil // empty or only comments
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && root.Tag == "!!null" {
		return nil
	}
	var errs []error
	var leaves []leaf
	walkNode(root, reflect.TypeFor[Config](), nil, at, &errs, &leaves)
	for _, l := range leaves {
		key := strings.Join(l.segs, ".")
		ptr := reflect.New(l.typ)
		if err := l.node.Decode(ptr.Interface()); err != nil {
			errs = append(errs, &Error{Source: at(l.node.Line), Key: key, Msg: fmt.Sprintf("want %s, got %q", typeWord(l.typ), l.node.Value)})
			continue
		}
		setPath(reflect.ValueOf(cfg).Elem(), l.segs, ptr.Elem())
		src.set(key, at(l.node.Line))
	}
	return errs
}

// typeWord names a Go type for a person writing YAML.
func typeWord(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int64:
		return "a whole number"
	case reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "a mapping"
	}
	return "a value"
}

// walkNode checks node against type t, reporting unknown and duplicate
// keys and shape mismatches, and collects the leaves it sets. Null values
// set nothing.
func walkNode(n *yaml.Node, t reflect.Type, segs []string, at func(int) Source, errs *[]error, leaves *[]leaf) {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		return
	}
	key := strings.Join(segs, ".")
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		if n.Kind != yaml.MappingNode {
			what := "the configuration"
			if key != "" {
				what = key
			}
			*errs = append(*errs, &Error{Source: at(n.Line), Msg: fmt.Sprintf("%s must be a mapping of keys, not %s", what, nodeWord(n))})
			return
		}
		seen := map[string]int{}
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			name := k.Value
			if prev, dup := seen[name]; dup {
				*errs = append(*errs, &Error{Source: at(k.Line), Key: strings.Join(appendSeg(segs, name), "."), Msg: fmt.Sprintf("set twice (first on line %d); keep one", prev)})
				continue
			}
			seen[name] = k.Line
			if t.Kind() == reflect.Map {
				walkNode(v, t.Elem(), appendSeg(segs, name), at, errs, leaves)
				continue
			}
			f, ok := fieldByYAML(t, name)
			if !ok {
				*errs = append(*errs, &Error{Source: at(k.Line), Msg: unknownKey(t, key, name)})
				continue
			}
			walkNode(v, f.Type, appendSeg(segs, name), at, errs, leaves)
		}
	default:
		*leaves = append(*leaves, leaf{segs: segs, node: n, typ: t})
	}
}

func nodeWord(n *yaml.Node) string {
	switch n.Kind {
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		return fmt.Sprintf("the value %q", n.Value)
	}
	return "this"
}

func fieldByYAML(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		if f := t.Field(i); yamlName(f) == name {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// unknownKey explains an unknown key, suggesting the closest known one.
func unknownKey(t reflect.Type, parent, name string) string {
	var known []string
	for i := range t.NumField() {
		known = append(known, yamlName(t.Field(i)))
	}
	where := "at the top level"
	if parent != "" {
		where = "in " + parent
	}
	best, bestD := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), k); d < bestD {
			best, bestD = k, d
		}
	}
	msg := fmt.Sprintf("unknown key %q %s", name, where)
	if best != "" {
		msg += fmt.Sprintf("; did you mean %q?", best)
	}
	return msg + " (known keys: " + strings.Join(known, ", ") + ")"
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// setPath sets the value at segs under v (addressable), creating map
// entries and keeping the other fields of existing ones.
func setPath(v reflect.Value, segs []string, val reflect.Value) {
	if len(segs) == 0 {
		v.Set(val)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		for i := range v.NumField() {
			if yamlName(v.Type().Field(i)) == segs[0] {
				setPath(v.Field(i), segs[1:], val)
				return
			}
		}
	case reflect.Map:
		if v.IsNil() {
			v.Set(reflect.MakeMap(v.Type()))
		}
		k := reflect.ValueOf(segs[0]).Convert(v.Type().Key())
		elem := reflect.New(v.Type().Elem()).Elem()
		if cur := v.MapIndex(k); cur.IsValid() {
			elem.Set(cur)
		}
		setPath(elem, segs[1:], val)
		v.SetMapIndex(k, elem)
	}
}

// EnvVar is an environment variable that overrides one key.
type EnvVar struct {
	Name string
	Key  string
}

// EnvVars lists the environment overrides: ANTHROPIC_BASE_URL and
// OPENAI_BASE_URL set the base_url of the providers of those names, and
// SLUICE_<KEY> (the dotted key upper-cased, dots as underscores, e.g.
// SLUICE_RUN_JOBS for run.jobs) sets each scalar key outside maps.
func EnvVars() []EnvVar {
	vars := []EnvVar{
		{Name: "ANTHROPIC_BASE_URL", Key: "models.providers.anthropic.base_url"},
		{Name: "OPENAI_BASE_URL", Key: "models.providers.openai.base_url"},
	}
	var walk func(t reflect.Type, segs []string)
	walk = func(t reflect.Type, segs []string) {
		for i := range t.NumField() {
			f := t.Field(i)
			s := appendSeg(segs, yamlName(f))
			switch f.Type.Kind() {
			case reflect.Struct:
				walk(f.Type, s)
			case reflect.String, reflect.Int, reflect.Int64, reflect.Float64, reflect.Bool:
				key := strings.Join(s, ".")
				vars = append(vars, EnvVar{Name: "SLUICE_" + strings.ToUpper(strings.ReplaceAll(key, ".", "_")), Key: key})
			}
		}
	}
	walk(reflect.TypeFor[Config](), nil)
	return vars
}

func applyEnv(cfg *Config, src *Sources, getenv func(string) string) []error {
	var errs []error
	root := reflect.ValueOf(cfg).Elem()
	for _, ev := range EnvVars() {
		val := getenv(ev.Name)
		if val == "" {
			continue
		}
		s := Source{Kind: SourceEnv, Env: ev.Name}
		segs := strings.Split(ev.Key, ".")
		if strings.HasSuffix(ev.Name, "_BASE_URL") && !strings.HasPrefix(ev.Name, "SLUICE_") {
			if _, ok := cfg.Models.Providers[segs[2]]; !ok {
				continue // no provider of that name to point elsewhere
			}
			setPath(root, segs, reflect.ValueOf(val))
			src.set(ev.Key, s)
			continue
		}
		typ := typeAt(reflect.TypeFor[Config](), segs)
		v := reflect.New(typ).Elem()
		var perr error
		switch typ.Kind() {
		case reflect.String:
			v.SetString(val)
		case reflect.Int, reflect.Int64:
			var n int64
			n, perr = strconv.ParseInt(val, 10, 64)
			v.SetInt(n)
		case reflect.Float64:
			var f float64
			f, perr = strconv.ParseFloat(val, 64)
			v.SetFloat(f)
		case reflect.Bool:
			var b bool
			b, perr = strconv.ParseBool(val)
			v.SetBool(b)
		}
		if perr != nil {
			errs = append(errs, &Error{Source: s, Key: ev.Key, Msg: fmt.Sprintf("want %s, got %q; fix or unset %s", typeWord(typ), val, ev.Name)})
			continue
		}
		setPath(root, segs, v)
		src.set(ev.Key, s)
	}
	return errs
}

func typeAt(t reflect.Type, segs []string) reflect.Type {
	for _, s := range segs {
		f, _ := fieldByYAML(t, s)
		t = f.Type
	}
	return t
}
