package capability

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/sluice-run/sluice/internal/config"
)

// ManifestName is the file that makes a directory a capability.
const ManifestName = "capability.json"

//go:embed capability.schema.json
var schemaJSON []byte

//go:embed all:builtin
var builtinFS embed.FS

// Schema returns the JSON schema capability.json files are validated
// against.
func Schema() []byte { return bytes.Clone(schemaJSON) }

// compiled is the schema, compiled once; it never changes after.
var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schemaJSON))
	if err != nil {
		return nil, fmt.Errorf("capability schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	const url = "sluice:///capability.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("capability schema: %w", err)
	}
	return c.Compile(url)
})

// Parse validates one capability.json. fsys is the capability's directory
// (fragment files are read from it), file names the manifest in errors and
// dirName is the directory's name, which the id must equal. It returns every
// problem found; the Capability is meaningful only when there are none.
func Parse(fsys fs.FS, file, dirName string) (Capability, []error) {
	data, err := fs.ReadFile(fsys, ManifestName)
	if err != nil {
		return Capability{}, []error{&Error{File: file, Msg: fmt.Sprintf("cannot read: %v", unwrapPath(err)), Fix: "make the file readable"}}
	}
	sch, err := compiled()
	if err != nil {
		return Capability{}, []error{err}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return Capability{}, []error{&Error{File: file, Path: "$", Msg: fmt.Sprintf("not valid JSON: %v", err), Fix: "write one JSON object"}}
	}
	if err := sch.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if !errors.As(err, &ve) {
			return Capability{}, []error{fmt.Errorf("%s: validate: %w", file, err)}
		}
		return Capability{}, schemaErrors(file, ve)
	}
	var c Capability
	if err := json.Unmarshal(data, &c); err != nil {
		return Capability{}, []error{&Error{File: file, Path: "$", Msg: err.Error(), Fix: "match the capability schema"}}
	}
	errs := semantic(&c, fsys, file, dirName)
	return c, errs
}

// schemaErrors turns the schema's leaf failures into located errors with a
// fix, in document order.
func schemaErrors(file string, ve *jsonschema.ValidationError) []error {
	p := message.NewPrinter(language.English)
	var out []*Error
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		loc := jsonPath(e.InstanceLocation)
		msg := e.ErrorKind.LocalizedString(p)
		var fix string
		switch k := e.ErrorKind.(type) {
		case *kind.Required:
			fix = "add " + quoteAll(k.Missing)
		case *kind.AdditionalProperties:
			fix = "remove " + quoteAll(k.Properties) + " or correct its spelling"
		case *kind.Enum, *kind.Const:
			fix = "use one of the listed values"
		case *kind.Type:
			fix = "give it the expected type"
		case *kind.Pattern:
			fix = patternFix(e.InstanceLocation)
		case *kind.MinProperties, *kind.MaxProperties:
			fix = `give exactly one of "inline" (the text) or "file" (a path relative to the capability directory)`
		case *kind.MinItems:
			fix = "list at least one value"
		case *kind.MinLength:
			fix = "write a non-empty value"
		case *kind.UniqueItems:
			fix = "remove the duplicate"
		default:
			fix = "see the capability schema (sluice capability show --schema)"
		}
		out = append(out, &Error{File: file, Path: loc, Msg: msg, Fix: fix})
	}
	walk(ve)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	errs := make([]error, len(out))
	for i, e := range out {
		errs[i] = e
	}
	return errs
}

func patternFix(loc []string) string {
	last := ""
	if len(loc) > 0 {
		last = loc[len(loc)-1]
	}
	switch {
	case last == "version":
		return "use a semantic version such as 1.0.0"
	case last == "key":
		return "use lower-case words joined by _ and dots, such as max_findings"
	default:
		return "use lower-case words joined by hyphens, such as security-review"
	}
}

// jsonPath renders a JSON pointer's tokens as a JSON path: $.a[0].b.
func jsonPath(tokens []string) string {
	var b strings.Builder
	b.WriteString("$")
	for _, t := range tokens {
		if _, err := strconv.Atoi(t); err == nil {
			b.WriteString("[" + t + "]")
		} else {
			b.WriteString("." + t)
		}
	}
	return b.String()
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}

// CoreConfigKeys are the top-level keys of sluice's own configuration. A
// capability's config key may not start with one of them, dotted or not.
func CoreConfigKeys() []string {
	t := reflect.TypeFor[config.Config]()
	out := make([]string, 0, t.NumField())
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("yaml"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// semantic checks what the schema cannot: names against the vocabulary,
// the partition, fragment files, config types, gate kinds.
func semantic(c *Capability, fsys fs.FS, file, dirName string) []error {
	var errs []error
	bad := func(p, msg, fix string) { errs = append(errs, &Error{File: file, Path: p, Msg: msg, Fix: fix}) }
	if c.ID != dirName {
		bad("$.id", fmt.Sprintf("id %q does not match its directory %q", c.ID, dirName), fmt.Sprintf("set id to %q or rename the directory to %q", dirName, c.ID))
	}
	for i, r := range c.Requires {
		if r == c.ID {
			bad(fmt.Sprintf("$.requires[%d]", i), fmt.Sprintf("%q requires itself", r), "remove it")
		}
	}
	core := CoreConfigKeys()
	seenKey := map[string]int{}
	for i, k := range c.Config {
		p := fmt.Sprintf("$.config[%d]", i)
		first, _, _ := strings.Cut(k.Key, ".")
		if contains(core, first) {
			bad(p+".key", fmt.Sprintf("key %q collides with sluice's core config key %q", k.Key, first), "rename it; core keys are "+strings.Join(core, ", "))
		}
		if j, dup := seenKey[k.Key]; dup {
			bad(p+".key", fmt.Sprintf("key %q is declared twice (also $.config[%d])", k.Key, j), "remove one")
		}
		seenKey[k.Key] = i
		for j, a := range k.Allowed {
			if err := typeCheck(k.Type, a); err != nil {
				bad(fmt.Sprintf("%s.allowed[%d]", p, j), err.Error(), "make every allowed value a "+k.Type)
			}
		}
		if k.Default != nil {
			if err := typeCheck(k.Type, k.Default); err != nil {
				bad(p+".default", err.Error(), "make the default a "+k.Type)
			} else if len(k.Allowed) > 0 && !allowed(k.Allowed, k.Default) {
				bad(p+".default", fmt.Sprintf("default %v is not among the allowed values", k.Default), "add it to allowed or change it")
			}
		}
	}
	for i := range c.Contributions {
		k := &c.Contributions[i]
		p := fmt.Sprintf("$.contributions[%d]", i)
		pt, ok := LookupPoint(k.Point)
		if !ok {
			bad(p+".point", fmt.Sprintf("%q is not an extension point", k.Point), "use one of "+strings.Join(PointNames(), ", "))
		} else if o := offenses(Declaration{Step: pt.Step, Roles: []string{k.Into}, Contribution: true}); len(o) > 0 {
			for _, m := range o {
				bad(p+".into", m, "")
			}
		} else if !contains(pt.Roles, k.Into) {
			if len(pt.Roles) == 0 {
				bad(p+".point", fmt.Sprintf("point %q takes gates only: no delegation happens there for a contribution into %q to reach", k.Point, k.Into), "move the contribution to a point where "+k.Into+" delegates ("+strings.Join(pointsFor(k.Into), ", ")+"), or make it a gate")
			} else {
				bad(p+".into", fmt.Sprintf("role %q does not delegate at point %q", k.Into, k.Point), "contribute into one of "+strings.Join(pt.Roles, ", ")+", or use a point where "+k.Into+" delegates ("+strings.Join(pointsFor(k.Into), ", ")+")")
			}
		}
		text, err := fragmentText(fsys, k.Fragment)
		if err != nil {
			bad(p+".fragment.file", err.Error(), "point file at a readable UTF-8 file inside the capability directory, by a relative path")
		} else if strings.TrimSpace(text) == "" {
			bad(p+".fragment", "the fragment is empty", "write the text to contribute")
		} else if n := tokens(text); n > MaxFragmentTokens {
			bad(p+".fragment", fmt.Sprintf("the fragment is about %d tokens, over the limit of %d", n, MaxFragmentTokens), "shorten it to guidance the role can act on")
		}
		k.Text = text
		if k.When != nil && k.When.Config != "" {
			ck, ok := c.configKey(k.When.Config)
			switch {
			case !ok:
				bad(p+".when.config", fmt.Sprintf("%q is not a key of this capability's config", k.When.Config), "declare it under config with type bool, or remove when.config")
			case ck.Type != "bool":
				bad(p+".when.config", fmt.Sprintf("config key %q is a %s, not a bool", k.When.Config, ck.Type), "name a bool key")
			}
		}
	}
	seenGate := map[string]int{}
	for i, g := range c.Gates {
		p := fmt.Sprintf("$.gates[%d]", i)
		if _, ok := LookupPoint(g.Point); !ok {
			bad(p+".point", fmt.Sprintf("%q is not an extension point", g.Point), "use one of "+strings.Join(PointNames(), ", "))
		}
		if j, dup := seenGate[g.ID]; dup {
			bad(p+".id", fmt.Sprintf("gate id %q is used twice (also $.gates[%d])", g.ID, j), "give each gate its own id")
		}
		seenGate[g.ID] = i
		switch g.Kind {
		case "command":
			if strings.TrimSpace(g.Command) == "" {
				bad(p+".command", "a command gate has no command", "set command to the shell command that passes on exit status 0")
			}
		case "attested":
			if strings.TrimSpace(g.Text) == "" {
				bad(p+".text", "an attested gate has no text", "set text to the claim the attesting agent must confirm with evidence")
			}
			if g.Command != "" {
				bad(p+".command", "an attested gate runs no command", `remove command, or make the gate kind "command"`)
			}
		}
	}
	return errs
}

// pointsFor lists the points at which role delegates.
func pointsFor(role string) []string {
	var out []string
	for _, p := range Points() {
		if contains(p.Roles, role) {
			out = append(out, p.Name)
		}
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

func fragmentText(fsys fs.FS, f FragmentSpec) (string, error) {
	if f.File == "" {
		return f.Inline, nil
	}
	name := filepath.ToSlash(f.File)
	if path.IsAbs(name) || filepath.IsAbs(f.File) || !fs.ValidPath(path.Clean(name)) || path.Clean(name) == "." || path.Clean(name) == ManifestName {
		return "", fmt.Errorf("%q is not a file inside the capability directory", f.File)
	}
	data, err := fs.ReadFile(fsys, path.Clean(name))
	if err != nil {
		return "", fmt.Errorf("cannot read %q: %v", f.File, unwrapPath(err))
	}
	if !utf8.Valid(data) {
		return "", fmt.Errorf("%q is not UTF-8 text", f.File)
	}
	return string(data), nil
}

// typeCheck reports whether v (as decoded from JSON or YAML) has type t.
func typeCheck(t string, v any) error {
	ok := false
	switch t {
	case "string":
		_, ok = v.(string)
	case "bool":
		_, ok = v.(bool)
	case "int":
		switch n := v.(type) {
		case float64:
			ok = n == float64(int64(n))
		case int, int64, uint64:
			ok = true
		}
	case "number":
		switch v.(type) {
		case float64, int, int64, uint64:
			ok = true
		}
	case "list":
		switch l := v.(type) {
		case []any:
			ok = true
			for _, x := range l {
				if _, s := x.(string); !s {
					ok = false
				}
			}
		case []string:
			ok = true
		}
	}
	if !ok {
		return fmt.Errorf("%s is not a %s", describe(v), t)
	}
	return nil
}

func describe(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func allowed(list []any, v any) bool {
	for _, a := range list {
		if equalValue(a, v) {
			return true
		}
	}
	return false
}

// equalValue compares config values across JSON (float64) and YAML (int)
// decodings.
func equalValue(a, b any) bool {
	if fa, ok := number(a); ok {
		fb, ok := number(b)
		return ok && fa == fb
	}
	return reflect.DeepEqual(a, b)
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case uint64:
		return float64(n), true
	}
	return 0, false
}

// ConfigValues checks the values set for c in capabilities.config.<id>
// against its config slice and returns the effective values: each declared
// key's set value, or its default when unset.
func ConfigValues(c Capability, set map[string]any) (map[string]any, []error) {
	file := ".sluice/config.yaml"
	out := map[string]any{}
	var errs []error
	for _, k := range c.Config {
		if k.Default != nil {
			out[k.Key] = k.Default
		}
	}
	for _, key := range sortedKeys(set) {
		v := set[key]
		p := "$.capabilities.config." + c.ID + "." + key
		k, ok := c.configKey(key)
		if !ok {
			var names []string
			for _, ck := range c.Config {
				names = append(names, ck.Key)
			}
			fix := "remove it; " + c.ID + " declares no config keys"
			if len(names) > 0 {
				fix = "use one of " + strings.Join(names, ", ")
			}
			errs = append(errs, &Error{File: file, Path: p, Msg: fmt.Sprintf("capability %s has no config key %q", c.ID, key), Fix: fix})
			continue
		}
		if err := typeCheck(k.Type, v); err != nil {
			errs = append(errs, &Error{File: file, Path: p, Msg: err.Error(), Fix: "set a " + k.Type + " (" + k.Description + ")"})
			continue
		}
		if len(k.Allowed) > 0 && !allowed(k.Allowed, v) {
			errs = append(errs, &Error{File: file, Path: p, Msg: fmt.Sprintf("%s is not allowed", describe(v)), Fix: "use one of " + describe(k.Allowed)})
			continue
		}
		out[key] = v
	}
	return out, errs
}

// PluginLocations lists where plugins are searched, highest precedence
// first, as internal/resolve searches them: the --plugin-dir values, the
// project's .sluice/plugins and .claude/plugins, then the user's config
// dir's plugins (userConfigDir "" skips it).
func PluginLocations(projectRoot, userConfigDir string, extra []string) []string {
	out := append([]string(nil), extra...)
	out = append(out, filepath.Join(projectRoot, ".sluice", "plugins"), filepath.Join(projectRoot, ".claude", "plugins"))
	if userConfigDir != "" {
		out = append(out, filepath.Join(userConfigDir, "plugins"))
	}
	return out
}

// PluginDirs expands plugin locations into plugin directories: a location
// holding a capabilities directory is a plugin itself, any other is a
// directory of plugins. Missing locations are skipped. Pass the result to
// Discover.
func PluginDirs(locations []string) []string {
	var out []string
	for _, loc := range locations {
		if isDir(filepath.Join(loc, "capabilities")) {
			out = append(out, loc)
			continue
		}
		entries, err := os.ReadDir(loc)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if d := filepath.Join(loc, e.Name()); isDir(d) {
				out = append(out, d)
			}
		}
	}
	return out
}

func isDir(p string) bool {
	info, err := os.Stat(p)
	return err == nil && info.IsDir()
}

// Discover finds and validates every capability the project can see: the
// project's .sluice/capabilities/<id>/, each plugin directory's
// capabilities/<id>/ (in the order given) and the built-in ones. The first
// found wins: a project or plugin capability may replace a built-in one of
// the same id, but two non-built-in capabilities with one id are an error.
// Requirements must name known capabilities and form no cycle. It returns
// the valid capabilities, sorted by id, and every problem found.
func Discover(projectRoot string, pluginDirs []string) ([]Capability, []error) {
	var all []Capability
	var errs []error
	byID := map[string]int{}
	add := func(c Capability) {
		if i, dup := byID[c.ID]; dup {
			if c.Source != SourceBuiltin {
				errs = append(errs, &Error{File: c.Source, Path: "$.id", Msg: fmt.Sprintf("capability %q is also defined by %s", c.ID, all[i].Source), Fix: "rename one of them"})
			}
			return
		}
		byID[c.ID] = len(all)
		all = append(all, c)
	}
	scan := func(dir, origin string) {
		entries, err := os.ReadDir(dir)
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, &Error{File: dir, Msg: fmt.Sprintf("cannot read capabilities directory: %v", unwrapPath(err)), Fix: "make it a readable directory"})
			}
			return
		}
		for _, e := range entries {
			capDir := filepath.Join(dir, e.Name())
			if !isDir(capDir) {
				continue
			}
			file := filepath.Join(capDir, ManifestName)
			if _, err := os.Stat(file); err != nil {
				errs = append(errs, &Error{File: capDir, Msg: "directory has no " + ManifestName, Fix: "add " + ManifestName + " or move the directory out of " + dir})
				continue
			}
			c, cerrs := Parse(os.DirFS(capDir), file, e.Name())
			if len(cerrs) > 0 {
				errs = append(errs, cerrs...)
				continue
			}
			c.Source, c.Origin = file, origin
			add(c)
		}
	}
	if projectRoot != "" {
		scan(filepath.Join(projectRoot, ".sluice", "capabilities"), "project")
	}
	for _, d := range pluginDirs {
		scan(filepath.Join(d, "capabilities"), "plugin "+d)
	}
	builtins, berrs := Builtin()
	errs = append(errs, berrs...)
	for _, c := range builtins {
		add(c)
	}
	all, rerrs := checkRequires(all)
	errs = append(errs, rerrs...)
	return all, errs
}

// Builtin returns the capabilities embedded in the binary, sorted by id.
func Builtin() ([]Capability, []error) {
	entries, err := builtinFS.ReadDir("builtin")
	if err != nil {
		return nil, []error{fmt.Errorf("read built-in capabilities: %w", err)}
	}
	var out []Capability
	var errs []error
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		sub, err := fs.Sub(builtinFS, "builtin/"+e.Name())
		if err != nil {
			errs = append(errs, fmt.Errorf("built-in capability %s: %w", e.Name(), err))
			continue
		}
		c, cerrs := Parse(sub, "builtin:"+e.Name()+"/"+ManifestName, e.Name())
		if len(cerrs) > 0 {
			errs = append(errs, cerrs...)
			continue
		}
		c.Source, c.Origin = SourceBuiltin, SourceBuiltin
		out = append(out, c)
	}
	return out, errs
}

// checkRequires drops capabilities whose requirements are unknown and
// reports them, then reports every requirement cycle; the result is sorted
// by id.
func checkRequires(all []Capability) ([]Capability, []error) {
	var errs []error
	byID := map[string]Capability{}
	for _, c := range all {
		byID[c.ID] = c
	}
	var ids []string
	for _, c := range all {
		ok := true
		for i, r := range c.Requires {
			if _, known := byID[r]; !known {
				errs = append(errs, &Error{File: c.Source, Path: fmt.Sprintf("$.requires[%d]", i), Msg: fmt.Sprintf("requires %q, which no capability provides", r), Fix: "install the capability " + r + " or remove the requirement"})
				ok = false
			}
		}
		if ok {
			ids = append(ids, c.ID)
		}
	}
	sort.Strings(ids)
	// Depth-first search colouring; each cycle is reported once, at the
	// capability where it is first closed.
	const (
		white = iota
		grey
		black
	)
	colour := map[string]int{}
	inCycle := map[string]bool{}
	var stack []string
	var visit func(id string)
	visit = func(id string) {
		colour[id] = grey
		stack = append(stack, id)
		for i, r := range byID[id].Requires {
			switch colour[r] {
			case white:
				if _, ok := byID[r]; ok {
					visit(r)
				}
			case grey:
				start := 0
				for j, s := range stack {
					if s == r {
						start = j
					}
				}
				cycle := append(append([]string{}, stack[start:]...), r)
				for _, s := range cycle {
					inCycle[s] = true
				}
				errs = append(errs, &Error{File: byID[id].Source, Path: fmt.Sprintf("$.requires[%d]", i), Msg: "requirement cycle: " + strings.Join(cycle, " -> "), Fix: "remove one requirement of the cycle"})
			}
		}
		stack = stack[:len(stack)-1]
		colour[id] = black
	}
	for _, id := range ids {
		if colour[id] == white {
			visit(id)
		}
	}
	out := make([]Capability, 0, len(ids))
	for _, id := range ids {
		if !inCycle[id] {
			out = append(out, byID[id])
		}
	}
	return out, errs
}

func sortedByID(cs []Capability) []Capability {
	out := append([]Capability(nil), cs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
