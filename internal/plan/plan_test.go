package plan

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files")

func loadSample(t *testing.T) *Plan {
	t.Helper()
	p, err := Load(filepath.Join("testdata", "search.yaml"))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return p
}

func TestLoadSample(t *testing.T) {
	p := loadSample(t)
	if p.Goal != "Add a search endpoint with pagination" {
		t.Errorf("Goal = %q", p.Goal)
	}
	if len(p.Tasks) != 4 {
		t.Fatalf("got %d tasks, want 4", len(p.Tasks))
	}
	t3, ok := p.Task("t3")
	if !ok || !reflect.DeepEqual(t3.DependsOn, []string{"t1", "t2"}) {
		t.Errorf("t3.DependsOn = %v", t3.DependsOn)
	}
	t1, _ := p.Task("t1")
	if got := t1.SpecificationAdherence.TechChoices; !reflect.DeepEqual(got, []string{"standard library only"}) {
		t.Errorf("t1 tech choices = %v", got)
	}
	if len(p.CritiqueHistory) != 2 || !p.CritiqueHistory[0].Resolved || p.CritiqueHistory[0].Category != "parallelism" {
		t.Errorf("critique history = %+v", p.CritiqueHistory)
	}
	if probs := Validate(p); len(probs) != 0 {
		t.Errorf("sample plan has problems: %v", probs)
	}
}

func TestMarshalRoundTripAndDeterminism(t *testing.T) {
	p := loadSample(t)
	a, err := Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("Marshal is not deterministic")
	}
	q, err := Parse(a, "marshalled.yaml")
	if err != nil {
		t.Fatalf("Parse(Marshal(p)): %v\n%s", err, a)
	}
	// An empty depends_on list is dropped by omitempty; normalise before comparing.
	p.Tasks[1].DependsOn = nil
	if !reflect.DeepEqual(p, q) {
		t.Errorf("round trip changed the plan:\nbefore %+v\nafter  %+v", p, q)
	}
	if bytes.Contains(a, []byte("specification_adherence: {}")) {
		t.Errorf("empty specification_adherence should be omitted:\n%s", a)
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // substrings, each must appear
		n    int      // number of problems reported
	}{
		{
			name: "unknown task field",
			yaml: "goal: g\ntasks:\n  - id: t1\n    acceptance_criteria: [x]\n  - id: t2\n    dependson: [t1]\n    acceptance_criteria: [x]\n",
			want: []string{`p.yaml:6: task "t2": unknown field "dependson"`, "depends_on"},
		},
		{
			name: "unknown top-level field",
			yaml: "goal: g\ntask:\n  - id: t1\n",
			want: []string{`p.yaml:2: unknown field "task"`},
		},
		{
			name: "wrong shape names task and field",
			yaml: "goal: g\ntasks:\n  - id: t1\n    depends_on: t0\n    acceptance_criteria: [x]\n",
			want: []string{`p.yaml:4: task "t1": depends_on: must be a list, not the value "t0"`},
		},
		{
			name: "nested field",
			yaml: "goal: g\ntasks:\n  - id: t1\n    acceptance_criteria: [x]\n    specification_adherence:\n      tech_choices: go\n      styles: [x]\n",
			want: []string{
				`p.yaml:6: task "t1": specification_adherence.tech_choices: must be a list`,
				`p.yaml:7: task "t1": specification_adherence: unknown field "styles"`,
			},
			n: 2,
		},
		{
			name: "every problem at once",
			yaml: "goal: g\ntasks:\n  - id: t1\n    title: [a]\n    acceptance_criteria: [x]\n  - id: t2\n    colour: red\n    acceptance_criteria: x\n",
			want: []string{
				`p.yaml:4: task "t1": title: must be a string, not a list`,
				`p.yaml:7: task "t2": unknown field "colour"`,
				`p.yaml:8: task "t2": acceptance_criteria: must be a list`,
			},
			n: 3,
		},
		{
			name: "task without id is named by position",
			yaml: "goal: g\ntasks:\n  - id: t1\n    acceptance_criteria: [x]\n  - title: no id\n    bogus: 1\n",
			want: []string{`p.yaml:6: task "#2": unknown field "bogus"`},
		},
		{
			name: "bad scalar in critique history",
			yaml: "goal: g\ntasks:\n  - id: t1\n    acceptance_criteria: [x]\ncritique_history:\n  - iteration: first\n    verdict: REVISE\n",
			want: []string{`p.yaml:6: critique_history[0].iteration: cannot unmarshal`},
		},
		{
			name: "duplicate key",
			yaml: "goal: g\ntasks:\n  - id: t1\n    title: a\n    title: b\n    acceptance_criteria: [x]\n",
			want: []string{`p.yaml:5: task "t1": title: mapping key "title" already defined at line 4`},
		},
		{
			name: "syntax error has a line",
			yaml: "goal: g\ntasks:\n  - id: t1\n    title: \"unterminated\n",
			want: []string{"p.yaml:4: found unexpected end of stream"},
		},
		{
			name: "two documents",
			yaml: "goal: g\n---\ngoal: h\n",
			want: []string{"p.yaml:2: more than one YAML document"},
		},
		{
			name: "empty",
			yaml: "  \n",
			want: []string{"p.yaml: the file is empty"},
		},
		{
			name: "not a mapping",
			yaml: "- a\n- b\n",
			want: []string{"p.yaml:1: must be a mapping of fields, not a list"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse([]byte(tt.yaml), "p.yaml")
			if err == nil {
				t.Fatal("Parse succeeded, want an error")
			}
			if !errors.Is(err, ErrSyntax) {
				t.Errorf("error does not wrap ErrSyntax: %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n%v\ndoes not contain\n%s", err, w)
				}
			}
			var pe *ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("want a *ParseError, got %#v", err)
			}
			if n := max(tt.n, 1); len(pe.Errs) != n {
				t.Errorf("got %d problems, want %d: %v", len(pe.Errs), n, err)
			}
		})
	}
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), "nope.yaml") {
		t.Errorf("Load of a missing file: %v", err)
	}
}

// The acceptance test of issue 4: five different problems, each reported
// with its task id, in a single Validate call.
func TestValidateReportsEveryProblemAtOnce(t *testing.T) {
	src := `goal: g
tasks:
  - id: t1
    depends_on: [t3]
    acceptance_criteria: [a]
  - id: t2
    depends_on: [t9]
    acceptance_criteria: [a]
  - id: t3
    depends_on: [t1]
    acceptance_criteria: [a]
  - id: t2
    acceptance_criteria: [a]
  - id: t5
  - id: t6
    files_to_modify: [../outside.go]
    acceptance_criteria: [a]
`
	p, err := Parse([]byte(src), "p.yaml")
	if err != nil {
		t.Fatal(err)
	}
	probs := Validate(p)
	want := []string{
		`task "t2": depends_on: "t9" does not exist`,
		`task "t2": id: duplicate id: tasks 2 and 4 are both "t2"; ids must be unique`,
		`task "t5": acceptance_criteria: the task has no acceptance criteria; give it at least one checkable criterion`,
		`task "t6": files_to_modify: "../outside.go" escapes the repository; name files inside it`,
		`task "t1": depends_on: dependency cycle: t1 -> t3 -> t1`,
	}
	var got []string
	for _, pr := range probs {
		got = append(got, pr.Error())
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Validate:\n got %q\nwant %q", got, want)
	}
}

func TestValidateCases(t *testing.T) {
	base := func() *Plan {
		return &Plan{Goal: "g", Tasks: []Task{
			{ID: "a", AcceptanceCriteria: []string{"x"}},
			{ID: "b", DependsOn: []string{"a"}, AcceptanceCriteria: []string{"x"}},
		}}
	}
	tests := []struct {
		name   string
		mutate func(p *Plan)
		want   []string
	}{
		{"valid", func(p *Plan) {}, nil},
		{"no tasks", func(p *Plan) { p.Tasks = nil }, []string{"plan: tasks: the plan has no tasks; a plan needs at least one"}},
		{"empty id", func(p *Plan) { p.Tasks[0].ID = ""; p.Tasks[1].DependsOn = nil }, []string{`plan: id: task 1 ("") has no id; give every task a unique id`}},
		{"self dependency", func(p *Plan) { p.Tasks[0].DependsOn = []string{"a"} }, []string{`task "a": depends_on: the task depends on itself`}},
		{"repeated dependency", func(p *Plan) { p.Tasks[1].DependsOn = []string{"a", "a"} }, []string{`task "b": depends_on: "a" is listed more than once`}},
		{"blank criterion", func(p *Plan) { p.Tasks[0].AcceptanceCriteria = []string{"x", " "} }, []string{`task "a": acceptance_criteria: criterion 2 is empty`}},
		{"absolute path", func(p *Plan) { p.Tasks[0].FilesToModify = []string{"/etc/passwd"} }, []string{`task "a": files_to_modify: "/etc/passwd" is absolute; name files relative to the repository root`}},
		{"escape after cleaning", func(p *Plan) { p.Tasks[0].FilesToRead = []string{"pkg/../../x"} }, []string{`task "a": files_to_read: "pkg/../../x" escapes the repository; name files inside it`}},
		{"inside a subdir that cleans back in is fine", func(p *Plan) { p.Tasks[0].FilesToModify = []string{"pkg/../x.go", "./y.go"} }, nil},
		{"git dir", func(p *Plan) { p.Tasks[0].FilesToModify = []string{"./.git/config"} }, []string{`task "a": files_to_modify: "./.git/config" is inside .git/, which tasks may not touch`}},
		{"sluice dir", func(p *Plan) { p.Tasks[1].FilesToRead = []string{".sluice/config.yaml"} }, []string{`task "b": files_to_read: ".sluice/config.yaml" is inside .sluice/, which tasks may not touch`}},
		{"gitignore is not .git", func(p *Plan) { p.Tasks[0].FilesToModify = []string{".gitignore", ".github/x.yml"} }, nil},
		{"empty path", func(p *Plan) { p.Tasks[0].FilesToModify = []string{""} }, []string{`task "a": files_to_modify: "" is empty`}},
		{"review depth", func(p *Plan) { p.Tasks[0].ReviewDepth = "deep" }, []string{`task "a": review_depth: "deep" is not a review depth; use lightweight, standard or full`}},
		{"effort", func(p *Plan) { p.Tasks[1].EstimatedEffort = "huge" }, []string{`task "b": estimated_effort: "huge" is not an effort; use small, medium or large`}},
		{"two cycles named separately", func(p *Plan) {
			p.Tasks = []Task{
				{ID: "a", DependsOn: []string{"b"}, AcceptanceCriteria: []string{"x"}},
				{ID: "b", DependsOn: []string{"a"}, AcceptanceCriteria: []string{"x"}},
				{ID: "c", DependsOn: []string{"e"}, AcceptanceCriteria: []string{"x"}},
				{ID: "d", DependsOn: []string{"c"}, AcceptanceCriteria: []string{"x"}},
				{ID: "e", DependsOn: []string{"d", "a"}, AcceptanceCriteria: []string{"x"}},
			}
		}, []string{
			`task "a": depends_on: dependency cycle: a -> b -> a`,
			`task "c": depends_on: dependency cycle: c -> e -> d -> c`,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := base()
			tt.mutate(p)
			var got []string
			for _, pr := range Validate(p) {
				got = append(got, pr.Error())
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Validate:\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}

func TestWaves(t *testing.T) {
	p := loadSample(t)
	got, err := Waves(p)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"t1", "t2"}, {"t3"}, {"t4"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Waves = %v, want %v", got, want)
	}

	// Level is the longest chain, not the first dependency seen: d depends on
	// a (wave 0) and c (wave 2), so it is in wave 3. Ids sort within a wave.
	p = &Plan{Tasks: []Task{
		{ID: "d", DependsOn: []string{"a", "c"}},
		{ID: "c", DependsOn: []string{"b"}},
		{ID: "b", DependsOn: []string{"a"}},
		{ID: "z"},
		{ID: "a"},
		{ID: "e", DependsOn: []string{"a"}},
	}}
	got, err = Waves(p)
	if err != nil {
		t.Fatal(err)
	}
	want = [][]string{{"a", "z"}, {"b", "e"}, {"c"}, {"d"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Waves = %v, want %v", got, want)
	}
}

func TestWavesRejectsInvalidGraphs(t *testing.T) {
	tests := []struct {
		name  string
		tasks []Task
		want  string
	}{
		{"cycle", []Task{{ID: "a", DependsOn: []string{"b"}}, {ID: "b", DependsOn: []string{"a"}}}, "dependency cycle a -> b -> a"},
		{"dangling", []Task{{ID: "a", DependsOn: []string{"x"}}}, `task "a" depends on "x", which does not exist`},
		{"self", []Task{{ID: "a", DependsOn: []string{"a"}}}, `task "a" depends on itself`},
		{"duplicate", []Task{{ID: "a"}, {ID: "a"}}, `duplicate task id "a"`},
		{"empty id", []Task{{ID: ""}}, "a task has no id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Waves(&Plan{Tasks: tt.tasks})
			if !errors.Is(err, ErrInvalidGraph) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Waves error = %v, want ErrInvalidGraph containing %q", err, tt.want)
			}
		})
	}
}

func TestOverlap(t *testing.T) {
	tests := []struct {
		a, b []string
		want []string
	}{
		{[]string{"a.go"}, []string{"b.go"}, nil},
		{[]string{"a.go", "b.go"}, []string{"./b.go", "c.go"}, []string{"b.go"}},
		{[]string{"pkg/"}, []string{"pkg/x.go", "other/y.go"}, []string{"pkg/x.go"}},
		{[]string{"pkg/sub/x.go"}, []string{"pkg"}, []string{"pkg/sub/x.go"}},
		{[]string{"pkg/"}, []string{"pkg"}, []string{"pkg"}},
		{[]string{"pkgx/a.go"}, []string{"pkg/"}, nil}, // a shared prefix is not a parent directory
		{[]string{"."}, []string{"a.go", "d/b.go"}, []string{"a.go", "d/b.go"}},
		{[]string{"x/../a.go"}, []string{"a.go"}, []string{"a.go"}},
		{nil, []string{"a.go"}, nil},
	}
	for _, tt := range tests {
		a := &Task{ID: "a", FilesToModify: tt.a}
		b := &Task{ID: "b", FilesToModify: tt.b}
		got := Overlap(a, b)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Overlap(%q, %q) = %q, want %q", tt.a, tt.b, got, tt.want)
		}
		if rev := Overlap(b, a); !reflect.DeepEqual(rev, tt.want) {
			t.Errorf("Overlap is not symmetric: Overlap(%q, %q) = %q, want %q", tt.b, tt.a, rev, tt.want)
		}
	}
	// Files only read never overlap.
	a := &Task{FilesToRead: []string{"a.go"}}
	b := &Task{FilesToModify: []string{"a.go"}}
	if got := Overlap(a, b); got != nil {
		t.Errorf("read-only file counted as overlap: %q", got)
	}
}

func TestStagesSplitOverlappingTasksOfAWave(t *testing.T) {
	p := &Plan{Tasks: []Task{
		{ID: "a", FilesToModify: []string{"api/"}},
		{ID: "b", FilesToModify: []string{"api/page.go"}},
		{ID: "c", FilesToModify: []string{"docs/x.md"}},
		{ID: "d", FilesToModify: []string{"api/other.go"}, DependsOn: []string{"c"}},
		{ID: "e", FilesToModify: []string{"web/"}, DependsOn: []string{"c"}},
	}}
	got, err := Stages(p)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"a", "c"}, {"b"}, {"d", "e"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Stages = %v, want %v", got, want)
	}
}

func TestCriticalPath(t *testing.T) {
	p := loadSample(t)
	effort := map[string]float64{"t1": 5, "t2": 1, "t3": 3, "t4": 2}
	cost := func(t *Task) float64 { return effort[t.ID] }
	// t1 -> t3 -> t4 = 5 + 3 + 2; the t2 branch is shorter.
	if got := CriticalPath(p, cost); got != 10 {
		t.Errorf("CriticalPath = %v, want 10", got)
	}
	effort["t2"] = 7
	if got := CriticalPath(p, cost); got != 12 {
		t.Errorf("CriticalPath with a slow t2 = %v, want 12", got)
	}
	// A cycle does not hang and still counts each task once per chain.
	cyc := &Plan{Tasks: []Task{{ID: "a", DependsOn: []string{"b"}}, {ID: "b", DependsOn: []string{"a"}}}}
	one := func(*Task) float64 { return 1 }
	if got := CriticalPath(cyc, one); got != 2 {
		t.Errorf("CriticalPath on a 2-cycle = %v, want 2", got)
	}
}

func TestRenderMarkdownGolden(t *testing.T) {
	p := loadSample(t)
	got := RenderMarkdown(p)
	golden := filepath.Join("testdata", "search.md")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("plan.md differs from %s (run go test -update if the change is intended):\n%s", golden, got)
	}
}

func TestRenderMarkdownInvalidPlan(t *testing.T) {
	p := &Plan{Goal: "g", Tasks: []Task{
		{ID: "a", Title: "A", DependsOn: []string{"b"}},
		{ID: "b", Title: "B", DependsOn: []string{"a"}},
	}}
	md := string(RenderMarkdown(p))
	for _, want := range []string{"dependency cycle a -> b -> a", "### `a`: A", "- Depends on: `b`", "- (none)"} {
		if !strings.Contains(md, want) {
			t.Errorf("plan.md lacks %q:\n%s", want, md)
		}
	}
	if strings.Contains(md, "| Wave |") {
		t.Errorf("invalid plan rendered a waves table:\n%s", md)
	}
}
