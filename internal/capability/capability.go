// Package capability is sluice's plug-in mechanism (seed 003): a capability
// is data — a directory holding capability.json and optional fragment
// files — that contributes text to agent roles at the loop's extension
// points and adds gate clauses there. Capabilities are found in the
// project, in plugins and in the binary; they are validated fail-closed
// against a JSON schema and the role-family partition; the enabled set comes
// from .sluice/config.yaml.
//
// This package decides what applies where. The host (reducer and engine)
// fires the points: see Points for when each fires and PointsBefore for
// which points' contributions go into a delegation.
package capability

import (
	"fmt"
	"strings"
)

// Capability is one validated capability.json.
type Capability struct {
	ID            string         `json:"id"`
	Version       string         `json:"version"`
	Title         string         `json:"title"`
	Description   string         `json:"description"`
	Tier          string         `json:"tier"`    // core | standard | full
	Default       string         `json:"default"` // on | off
	Requires      []string       `json:"requires,omitempty"`
	RuntimeCompat []string       `json:"runtimeCompat"`
	Config        []ConfigKey    `json:"config,omitempty"`
	Contributions []Contribution `json:"contributions,omitempty"`
	Gates         []GateDecl     `json:"gates,omitempty"`
	// Source is SourceBuiltin, or the path of the capability.json.
	Source string `json:"-"`
	// Origin says where it was found: "builtin", "project" or "plugin <dir>".
	Origin string `json:"-"`
}

// SourceBuiltin is the Source of a capability embedded in the binary.
const SourceBuiltin = "builtin"

// ConfigKey is one key of a capability's config slice. Its value is set in
// .sluice/config.yaml under capabilities.config.<id>.<key>.
type ConfigKey struct {
	Key string `json:"key"`
	// Type is string, bool, int, number or list (of strings).
	Type        string `json:"type"`
	Default     any    `json:"default,omitempty"`
	Description string `json:"description"`
	Allowed     []any  `json:"allowed,omitempty"`
}

// Contribution is text for one role at one point.
type Contribution struct {
	Point    string       `json:"point"`
	Into     string       `json:"into"`
	Fragment FragmentSpec `json:"fragment"`
	When     *When        `json:"when,omitempty"`
	// Text is the fragment's text: the inline text or the file's content.
	Text string `json:"-"`
}

// FragmentSpec is where a contribution's text is: inline, or a file
// relative to the capability's directory.
type FragmentSpec struct {
	Inline string `json:"inline,omitempty"`
	File   string `json:"file,omitempty"`
}

// When narrows a contribution. An empty field does not narrow.
type When struct {
	// Depth lists the review depths at which it applies.
	Depth []string `json:"depth,omitempty"`
	// Schedule lists the schedules (dag, waves) at which it applies.
	Schedule []string `json:"schedule,omitempty"`
	// Config names a bool key of the capability's config slice that must
	// be true.
	Config string `json:"config,omitempty"`
}

// GateDecl is a gate clause a capability adds at a point.
type GateDecl struct {
	ID    string `json:"id"`
	Point string `json:"point"`
	// Kind is "command" (passes on exit status 0) or "attested" (a model's
	// judgement recorded with its evidence).
	Kind    string `json:"kind"`
	Command string `json:"command,omitempty"`
	Text    string `json:"text,omitempty"`
	// Mode is "blocking" (a failure fails the attempt or the run) or
	// "advisory" (a failure is reported only).
	Mode string `json:"mode"`
}

// Error is one problem with a capability: the file, the JSON path of the
// offending value ($ is the document) and the fix.
type Error struct {
	File string
	Path string
	Msg  string
	Fix  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Path != "" {
		b.WriteString(": " + e.Path)
	}
	b.WriteString(": " + e.Msg)
	if e.Fix != "" {
		b.WriteString("; " + e.Fix)
	}
	return b.String()
}

// MaxFragmentTokens bounds one fragment (bytes/4). A contribution is
// guidance for one role, not a procedure; a fragment past this is rejected
// so that a capability cannot flood an agent's prompt.
const MaxFragmentTokens = 1000

func tokens(s string) int { return (len(s) + 3) / 4 }

// Fragment is a contribution ready for a prompt.
type Fragment struct {
	Capability string
	Point      string
	Into       string
	Text       string
	When       When
	// whenDefault is the declared default of When.Config's key.
	whenDefault bool
}

// Conditions are what When is evaluated against.
type Conditions struct {
	Depth    string
	Schedule string
	// Config is capabilities.config from the configuration: values by
	// capability id and key. A key not set takes its declared default.
	Config map[string]map[string]any
}

// Applies reports whether the fragment applies under c.
func (f Fragment) Applies(c Conditions) bool {
	if len(f.When.Depth) > 0 && !contains(f.When.Depth, c.Depth) {
		return false
	}
	if len(f.When.Schedule) > 0 && !contains(f.When.Schedule, c.Schedule) {
		return false
	}
	if f.When.Config != "" {
		v, set := c.Config[f.Capability][f.When.Config]
		if !set {
			return f.whenDefault
		}
		b, ok := v.(bool)
		return ok && b
	}
	return true
}

// Gate is a gate clause at a point, with the capability that declared it.
type Gate struct {
	Capability string
	GateDecl
}

// Contributions returns the fragments active capabilities contribute into
// role at point, ordered by capability id and then declaration order, so
// the same set always yields the same prompt. Use Fragment.Applies to drop
// those whose When does not hold for the delegation.
func Contributions(active []Capability, point, role string) []Fragment {
	var out []Fragment
	for _, c := range sortedByID(active) {
		for _, k := range c.Contributions {
			if k.Point != point || k.Into != role {
				continue
			}
			f := Fragment{Capability: c.ID, Point: k.Point, Into: k.Into, Text: strings.TrimSpace(k.Text)}
			if k.When != nil {
				f.When = *k.When
				if ck, ok := c.configKey(k.When.Config); ok {
					b, _ := ck.Default.(bool)
					f.whenDefault = b
				}
			}
			out = append(out, f)
		}
	}
	return out
}

// Gates returns the gate clauses active capabilities add at point, ordered
// by capability id and then declaration order.
func Gates(active []Capability, point string) []Gate {
	var out []Gate
	for _, c := range sortedByID(active) {
		for _, g := range c.Gates {
			if g.Point == point {
				out = append(out, Gate{Capability: c.ID, GateDecl: g})
			}
		}
	}
	return out
}

// Render lays fragments out as the delimited block a prompt carries, one
// block per fragment naming its capability. It matches the block
// agents.System writes, for callers that build prompts themselves.
func Render(frags []Fragment) string {
	var b strings.Builder
	for i, f := range frags {
		if i > 0 {
			b.WriteString("\n\n")
		}
		fmt.Fprintf(&b, "<capability name=%q>\n%s\n</capability>", f.Capability, f.Text)
	}
	return b.String()
}

func (c Capability) configKey(key string) (ConfigKey, bool) {
	for _, k := range c.Config {
		if k.Key == key {
			return k, true
		}
	}
	return ConfigKey{}, false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// ForDelegation returns every fragment that goes into one delegation of
// role made while the loop is in phase: the contributions at each of
// PointsBefore(role, phase, c.Schedule), in that point order, that apply
// under c. It is what the engine passes to the prompt composer.
func ForDelegation(active []Capability, role, phase string, c Conditions) []Fragment {
	var out []Fragment
	for _, p := range PointsBefore(role, phase, c.Schedule) {
		for _, f := range Contributions(active, p, role) {
			if f.Applies(c) {
				out = append(out, f)
			}
		}
	}
	return out
}
