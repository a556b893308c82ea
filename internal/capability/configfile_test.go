package capability

import (
	"strings"
	"testing"
)

func TestEditEnabled(t *testing.T) {
	const in = `# Project config.
run:
  jobs: 4 # four at a time

capabilities:
  # Capabilities we rely on.
  enabled:
    - house-rules # ours
  config:
    house-rules:
      strict: true
`
	out, changed, err := EditEnabled([]byte(in), "config.yaml", "security-review", true, nil)
	if err != nil || !changed {
		t.Fatalf("enable: changed %v err %v", changed, err)
	}
	got := string(out)
	for _, w := range []string{"# Project config.", "jobs: 4 # four at a time", "# Capabilities we rely on.", "- house-rules # ours", "- security-review", "strict: true"} {
		if !strings.Contains(got, w) {
			t.Errorf("lost %q:\n%s", w, got)
		}
	}
	again, changed, err := EditEnabled(out, "config.yaml", "security-review", true, nil)
	if err != nil || changed || string(again) != got {
		t.Errorf("enabling twice changed the file (changed %v, err %v)", changed, err)
	}
	out, changed, err = EditEnabled(out, "config.yaml", "house-rules", false, nil)
	if err != nil || !changed {
		t.Fatalf("disable: changed %v err %v", changed, err)
	}
	if got := string(out); strings.Contains(got, "- house-rules") || !strings.Contains(got, "- security-review") || !strings.Contains(got, "jobs: 4 # four at a time") {
		t.Errorf("after disable:\n%s", got)
	}
}

func TestEditEnabledNewFileAndDefaults(t *testing.T) {
	out, _, err := EditEnabled(nil, "config.yaml", "design-spec", true, []string{"house-rules"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "capabilities:\n  enabled:\n    - house-rules\n    - design-spec\n"; string(out) != want {
		t.Errorf("new file:\n%s\nwant:\n%s", out, want)
	}
	// Disabling a default-on capability with no list writes the other
	// defaults, so only it changes meaning; disabling the last one leaves an
	// explicit empty list, which is authoritative.
	out, _, err = EditEnabled([]byte("run:\n  jobs: 2\n"), "config.yaml", "house-rules", false, []string{"house-rules"})
	if err != nil {
		t.Fatal(err)
	}
	if want := "run:\n  jobs: 2\ncapabilities:\n  enabled: []\n"; string(out) != want {
		t.Errorf("disable default:\n%s\nwant:\n%s", out, want)
	}
}

func TestEditEnabledErrors(t *testing.T) {
	for in, want := range map[string]string{
		"- a\n- b\n":                      "config.yaml:1: the configuration is not a mapping",
		"capabilities: yes\n":             "config.yaml:1: capabilities is not a mapping",
		"capabilities:\n  enabled: all\n": "config.yaml:2: capabilities.enabled is not a list",
		"run: [\n":                        "config.yaml: invalid YAML",
	} {
		_, _, err := EditEnabled([]byte(in), "config.yaml", "x", true, nil)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", in, err, want)
		}
	}
}
