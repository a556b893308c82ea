package manifest

import (
	"bytes"
	"errors"
	"slices"
	"testing"
)

// FuzzParse checks that no input panics the parser and that what it returns
// is internally consistent. The seed corpus is in testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Add([]byte(bulletManifest))
	f.Add([]byte(tableManifest))
	for _, lang := range []string{"go", "python", "typescript", "rust", "java", "cpp"} {
		src, _ := BuiltinSource(lang)
		f.Add(src)
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		m, err := Parse("f.md", src)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error %v does not match ErrMalformed", err)
			}
			if m != nil {
				t.Fatal("manifest returned with an error")
			}
			return
		}
		lines := bytes.Count(src, []byte("\n")) + 1
		for _, w := range m.Warnings {
			if w.File != "f.md" || w.Line < 0 || w.Line > lines || w.Message == "" {
				t.Fatalf("bad warning %+v (input has %d lines)", w, lines)
			}
		}
		for role, r := range m.Roles {
			if !slices.Contains(roleNames, role) {
				t.Fatalf("unknown role %q accepted", role)
			}
			if r.Ref != GeneralPurpose {
				if _, _, _, err := ParseRef(r.Ref); err != nil {
					t.Fatalf("role %s: accepted invalid reference: %v", role, err)
				}
			}
			if r.Line < 1 || r.Line > lines {
				t.Fatalf("role %s on line %d of %d", role, r.Line, lines)
			}
		}
		for gate, g := range m.Gates {
			if !slices.Contains(gateNames, gate) {
				t.Fatalf("unknown gate %q accepted", gate)
			}
			if g.Alternatives == nil {
				t.Fatalf("gate %s: nil alternatives", gate)
			}
			if g.Command == "" && len(g.Alternatives) > 0 {
				t.Fatalf("gate %s: alternatives without a command", gate)
			}
		}
		if !slices.Contains(m.Sections, SectionRoles) {
			t.Fatal("parsed without a Role Fulfillment section")
		}
	})
}
