package capability

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeCap writes dir/<id>/capability.json and any extra files.
func writeCap(t *testing.T, dir, id, manifest string, files map[string]string) string {
	t.Helper()
	d := filepath.Join(dir, id)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(d, ManifestName), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		p := filepath.Join(d, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(d, ManifestName)
}

const validManifest = `{
  "id": "house-rules",
  "version": "0.2.0",
  "title": "House rules",
  "description": "Our conventions for executors.",
  "tier": "standard",
  "default": "on",
  "runtimeCompat": ["api"],
  "config": [{"key": "strict", "type": "bool", "default": false, "description": "Also demand doc comments."},
             {"key": "style", "type": "string", "default": "terse", "allowed": ["terse", "chatty"], "description": "Comment style."}],
  "contributions": [
    {"point": "execute:task:pre", "into": "executor", "fragment": {"file": "fragments/rules.md"}},
    {"point": "execute:task:pre", "into": "executor", "fragment": {"inline": "Doc every exported name."}, "when": {"config": "strict"}}
  ],
  "gates": [{"id": "no-todo", "point": "execute:task:post", "kind": "command", "command": "! grep -rn TODO .", "mode": "advisory"}]
}`

func TestDiscoverProjectCapability(t *testing.T) {
	root := t.TempDir()
	writeCap(t, filepath.Join(root, ".sluice", "capabilities"), "house-rules", validManifest, map[string]string{"fragments/rules.md": "Use tabs.\n"})
	all, errs := Discover(root, nil)
	for _, e := range errs {
		t.Error(e)
	}
	var got *Capability
	for i := range all {
		if all[i].ID == "house-rules" {
			got = &all[i]
		}
	}
	if got == nil {
		t.Fatalf("house-rules not discovered; got %d capabilities", len(all))
	}
	if got.Origin != "project" || !strings.HasSuffix(got.Source, filepath.Join("house-rules", ManifestName)) {
		t.Errorf("origin %q source %q", got.Origin, got.Source)
	}
	if got.Contributions[0].Text != "Use tabs.\n" || got.Contributions[1].Text != "Doc every exported name." {
		t.Errorf("fragment texts = %q, %q", got.Contributions[0].Text, got.Contributions[1].Text)
	}
	// The built-ins are there too, sorted by id.
	var ids []string
	for _, c := range all {
		ids = append(ids, c.ID)
	}
	if strings.Join(ids, ",") != "design-spec,house-rules,security-review" {
		t.Errorf("ids = %v", ids)
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	root := t.TempDir()
	file := writeCap(t, root, "wrong-dir", `{
  "id": "bad-cap",
  "version": "1.0.0",
  "title": "Bad",
  "description": "Everything wrong.",
  "tier": "standard",
  "default": "off",
  "runtimeCompat": ["api"],
  "requires": ["bad-cap"],
  "config": [
    {"key": "run.jobs", "type": "int", "description": "collides"},
    {"key": "models", "type": "string", "description": "collides too"},
    {"key": "level", "type": "int", "default": "high", "description": "wrong default"}
  ],
  "contributions": [
    {"point": "execute:pre", "into": "orchestrator", "fragment": {"inline": "Spawn the executors."}},
    {"point": "execute:pre", "into": "planner", "fragment": {"inline": "x"}},
    {"point": "deploy:pre", "into": "executor", "fragment": {"inline": "x"}},
    {"point": "execute:post", "into": "executor", "fragment": {"inline": "x"}},
    {"point": "plan:pre", "into": "planner", "fragment": {"file": "../../etc/passwd"}},
    {"point": "plan:pre", "into": "planner", "fragment": {"file": "missing.md"}},
    {"point": "plan:pre", "into": "planner", "fragment": {"inline": "x"}, "when": {"config": "level"}}
  ],
  "gates": [
    {"id": "g", "point": "verify:post", "kind": "command", "mode": "blocking"},
    {"id": "g", "point": "verify:post", "kind": "attested", "command": "true", "mode": "advisory"}
  ]
}`, nil)
	_, errs := Parse(os.DirFS(filepath.Dir(file)), file, "wrong-dir")
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
		if !strings.HasPrefix(e.Error(), file+": $.") {
			t.Errorf("error does not name the file and a JSON path: %v", e)
		}
	}
	all := strings.Join(msgs, "\n")
	for _, w := range []string{
		`$.id: id "bad-cap" does not match its directory "wrong-dir"; set id to "wrong-dir"`,
		`$.requires[0]: "bad-cap" requires itself`,
		`$.config[0].key: key "run.jobs" collides with sluice's core config key "run"`,
		`$.config[1].key: key "models" collides with sluice's core config key "models"`,
		`$.config[2].default: "high" is not a int`,
		`$.contributions[0].into: role "orchestrator" at step "execute"`,
		`$.contributions[1].into: role "planner" at step "execute"`,
		`$.contributions[2].point: "deploy:pre" is not an extension point; use one of research:pre`,
		`$.contributions[3].point: point "execute:post" takes gates only: no delegation happens there for a contribution into "executor" to reach; move the contribution to a point where executor delegates (execute:pre, execute:wave:pre, execute:task:pre)`,
		`$.contributions[4].fragment.file: "../../etc/passwd" is not a file inside the capability directory`,
		`$.contributions[5].fragment.file: cannot read "missing.md"`,
		`$.contributions[6].when.config: config key "level" is a int, not a bool`,
		`$.gates[0].command: a command gate has no command`,
		`$.gates[1].id: gate id "g" is used twice`,
		`$.gates[1].text: an attested gate has no text`,
		`$.gates[1].command: an attested gate runs no command`,
	} {
		if !strings.Contains(all, w) {
			t.Errorf("missing %q", w)
		}
	}
	if len(errs) != 16 {
		t.Errorf("got %d errors, want 16:\n%s", len(errs), all)
	}
}

func TestParseSchemaErrors(t *testing.T) {
	root := t.TempDir()
	file := writeCap(t, root, "x", `{
  "id": "x", "version": "one", "title": "X", "description": "d",
  "tier": "huge", "default": "off", "runtimeCompat": ["api", "vim"],
  "colour": "red",
  "contributions": [{"point": "plan:pre", "into": "planner", "fragment": {"inline": "a", "file": "b"}}]
}`, nil)
	_, errs := Parse(os.DirFS(filepath.Dir(file)), file, "x")
	var all []string
	for _, e := range errs {
		all = append(all, e.Error())
	}
	got := strings.Join(all, "\n")
	for _, w := range []string{
		`$: additional properties 'colour' not allowed; remove "colour"`,
		`$.version: `, `use a semantic version`,
		`$.tier: value must be one of 'core', 'standard', 'full'; use one of the listed values`,
		`$.runtimeCompat[1]: value must be one of`,
		`$.contributions[0].fragment: `, `give exactly one of "inline"`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
	_, errs = Parse(os.DirFS(filepath.Dir(file)), file, "x")
	if len(errs) < 5 {
		t.Errorf("want every schema problem, got %d", len(errs))
	}
}

func TestParseNotJSON(t *testing.T) {
	root := t.TempDir()
	file := writeCap(t, root, "x", `{"id": "x",`, nil)
	_, errs := Parse(os.DirFS(filepath.Dir(file)), file, "x")
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), file+": $: not valid JSON") {
		t.Errorf("errs = %v", errs)
	}
}

func manifest(id string, extra string) string {
	return `{"id": "` + id + `", "version": "1.0.0", "title": "T", "description": "D", "tier": "core", "default": "off", "runtimeCompat": ["api"]` + extra + `}`
}

func TestDiscoverRequires(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, ".sluice", "capabilities")
	writeCap(t, dir, "a", manifest("a", `, "requires": ["b"]`), nil)
	writeCap(t, dir, "b", manifest("b", `, "requires": ["c"]`), nil)
	writeCap(t, dir, "c", manifest("c", `, "requires": ["a"]`), nil)
	writeCap(t, dir, "d", manifest("d", `, "requires": ["nope"]`), nil)
	writeCap(t, dir, "e", manifest("e", `, "requires": ["security-review"]`), nil)
	all, errs := Discover(root, nil)
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	got := strings.Join(msgs, "\n")
	if !strings.Contains(got, "requirement cycle: a -> b -> c -> a") {
		t.Errorf("cycle not reported:\n%s", got)
	}
	if !strings.Contains(got, `$.requires[0]: requires "nope", which no capability provides`) {
		t.Errorf("unknown requirement not reported:\n%s", got)
	}
	var ids []string
	for _, c := range all {
		ids = append(ids, c.ID)
	}
	if strings.Join(ids, ",") != "design-spec,e,security-review" {
		t.Errorf("kept %v; want the cycle and the broken one dropped", ids)
	}
}

func TestDiscoverPluginsAndShadowing(t *testing.T) {
	root := t.TempDir()
	writeCap(t, filepath.Join(root, ".sluice", "capabilities"), "security-review", manifest("security-review", ""), nil)
	plug := filepath.Join(root, ".claude", "plugins", "acme")
	writeCap(t, filepath.Join(plug, "capabilities"), "acme-audit", manifest("acme-audit", ""), nil)
	writeCap(t, filepath.Join(plug, "capabilities"), "security-review", manifest("security-review", ""), nil)
	dirs := PluginDirs(PluginLocations(root, "", nil))
	if len(dirs) != 1 || dirs[0] != plug {
		t.Fatalf("PluginDirs = %v", dirs)
	}
	all, errs := Discover(root, dirs)
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `capability "security-review" is also defined by `+filepath.Join(root, ".sluice", "capabilities", "security-review", ManifestName)) {
		t.Errorf("errs = %v", errs)
	}
	for _, c := range all {
		switch c.ID {
		case "security-review":
			if c.Origin != "project" {
				t.Errorf("security-review from %s; the project's copy shadows the built-in and the plugin", c.Origin)
			}
		case "acme-audit":
			if c.Origin != "plugin "+plug {
				t.Errorf("acme-audit origin %q", c.Origin)
			}
		}
	}
}

func TestBuiltinCapabilities(t *testing.T) {
	cs, errs := Builtin()
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if len(cs) != 2 || cs[0].ID != "design-spec" || cs[1].ID != "security-review" {
		t.Fatalf("built-ins = %+v", cs)
	}
	for _, c := range cs {
		if c.Default != "off" {
			t.Errorf("%s is on by default", c.ID)
		}
		for _, k := range c.Contributions {
			if n := tokens(k.Text); n > 300 {
				t.Errorf("%s fragment at %s is %d tokens, over 300", c.ID, k.Point, n)
			}
		}
	}
	sr := cs[1]
	if g := Gates(cs, "verify:post"); len(g) != 1 || g[0].Capability != "security-review" || g[0].Kind != "attested" || g[0].Mode != "blocking" {
		t.Errorf("security-review gates at verify:post = %+v", g)
	}
	if f := Contributions([]Capability{sr}, "verify:pre", "code-reviewer"); len(f) != 1 || !strings.Contains(f[0].Text, "Path traversal") {
		t.Errorf("security-review reviewer fragment = %+v", f)
	}
	if f := Contributions(cs, "plan:post", "design-spec"); len(f) != 1 || f[0].Capability != "design-spec" {
		t.Errorf("design-spec fragment = %+v", f)
	}
}

func TestConfigValues(t *testing.T) {
	root := t.TempDir()
	file := writeCap(t, root, "house-rules", validManifest, map[string]string{"fragments/rules.md": "x"})
	c, errs := Parse(os.DirFS(filepath.Dir(file)), file, "house-rules")
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	vals, errs := ConfigValues(c, map[string]any{"strict": true})
	if len(errs) > 0 || vals["strict"] != true || vals["style"] != "terse" {
		t.Errorf("vals = %v, errs = %v", vals, errs)
	}
	_, errs = ConfigValues(c, map[string]any{"strict": "yes", "style": "loud", "colour": 1})
	var msgs []string
	for _, e := range errs {
		msgs = append(msgs, e.Error())
	}
	got := strings.Join(msgs, "\n")
	for _, w := range []string{
		`$.capabilities.config.house-rules.colour: capability house-rules has no config key "colour"; use one of strict, style`,
		`$.capabilities.config.house-rules.strict: "yes" is not a bool`,
		`$.capabilities.config.house-rules.style: "loud" is not allowed; use one of ["terse","chatty"]`,
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in:\n%s", w, got)
		}
	}
}
