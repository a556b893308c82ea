package plan

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzParse: Parse never panics, Validate and RenderMarkdown accept whatever
// Parse accepts, and a parsed plan survives Marshal and Parse unchanged.
func FuzzParse(f *testing.F) {
	sample, err := os.ReadFile(filepath.Join("testdata", "search.yaml"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(sample)
	f.Add([]byte("goal: g\ntasks:\n  - id: a\n    depends_on: [a]\n"))
	f.Add([]byte("tasks: &x [*x]\n"))
	f.Add([]byte("goal: [\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data, "fuzz.yaml")
		if err != nil {
			return
		}
		Validate(p)
		RenderMarkdown(p)
		Waves(p)
		Stages(p)
		CriticalPath(p, func(*Task) float64 { return 1 })
		out, err := Marshal(p)
		if err != nil {
			t.Fatalf("Marshal of a parsed plan: %v", err)
		}
		q, err := Parse(out, "again.yaml")
		if err != nil {
			t.Fatalf("re-parse: %v\n%s", err, out)
		}
		normalize(p)
		normalize(q)
		if !reflect.DeepEqual(p, q) {
			t.Fatalf("round trip changed the plan:\n%+v\n%+v", p, q)
		}
	})
}

// normalize maps the empty lists omitempty drops to nil.
func normalize(p *Plan) {
	nilIfEmpty := func(s []string) []string {
		if len(s) == 0 {
			return nil
		}
		return s
	}
	p.PreMortem = nilIfEmpty(p.PreMortem)
	if len(p.CritiqueHistory) == 0 {
		p.CritiqueHistory = nil
	}
	if len(p.Tasks) == 0 {
		p.Tasks = nil
	}
	for i := range p.Tasks {
		t := &p.Tasks[i]
		t.DependsOn = nilIfEmpty(t.DependsOn)
		t.FilesToModify = nilIfEmpty(t.FilesToModify)
		t.FilesToRead = nilIfEmpty(t.FilesToRead)
		t.AcceptanceCriteria = nilIfEmpty(t.AcceptanceCriteria)
		t.FailureModes = nilIfEmpty(t.FailureModes)
		sa := &t.SpecificationAdherence
		sa.RequiredPatterns = nilIfEmpty(sa.RequiredPatterns)
		sa.ForbiddenPatterns = nilIfEmpty(sa.ForbiddenPatterns)
		sa.TechChoices = nilIfEmpty(sa.TechChoices)
	}
}
