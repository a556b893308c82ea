package ui_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/report/fixture"
	"github.com/sluice-run/sluice/internal/store"
	"github.com/sluice-run/sluice/internal/ui"
)

// loopConstants parses the loop package's types.go and returns its string
// constants grouped by declared type; untyped ones are grouped by name
// prefix ("Role"). Parsing the source, not a hand-kept list, is what makes a
// new event type without a schema fail this test.
func loopConstants(t *testing.T) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "../loop/types.go", nil, 0)
	if err != nil {
		t.Fatalf("parse loop/types.go: %v", err)
	}
	out := map[string][]string{}
	for _, decl := range f.Decls {
		gd, ok := decl.(*ast.GenDecl)
		if !ok || gd.Tok != token.CONST {
			continue
		}
		for _, spec := range gd.Specs {
			vs := spec.(*ast.ValueSpec)
			group := ""
			if id, ok := vs.Type.(*ast.Ident); ok {
				group = id.Name
			} else if strings.HasPrefix(vs.Names[0].Name, "Role") {
				group = "Role"
			}
			for _, v := range vs.Values {
				lit, ok := v.(*ast.BasicLit)
				if !ok || lit.Kind != token.STRING || group == "" {
					continue
				}
				s, _ := strconv.Unquote(lit.Value)
				out[group] = append(out[group], s)
			}
		}
	}
	return out
}

func schemaDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(ui.JSONEntrySchema(), &doc); err != nil {
		t.Fatalf("the embedded schema is not JSON: %v", err)
	}
	return doc
}

func at(t *testing.T, v any, path ...string) any {
	t.Helper()
	for _, p := range path {
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("schema: %s is not an object", strings.Join(path, "."))
		}
		v = m[p]
	}
	return v
}

func enumOf(t *testing.T, doc map[string]any, path ...string) []string {
	t.Helper()
	raw, ok := at(t, doc, path...).([]any)
	if !ok {
		t.Fatalf("schema: no enum at %s", strings.Join(path, "."))
	}
	var out []string
	for _, v := range raw {
		out = append(out, v.(string))
	}
	return out
}

func TestSchemaNamesEveryLoopConstant(t *testing.T) {
	consts := loopConstants(t)
	doc := schemaDoc(t)
	cases := map[string][]string{
		"ActionType": {"$defs", "action", "properties", "type", "enum"},
		"EventType":  {"$defs", "event", "properties", "type", "enum"},
		"Phase":      {"$defs", "phase", "enum"},
		"Status":     {"$defs", "status", "enum"},
		"Stage":      {"$defs", "stage", "enum"},
		"Role":       {"$defs", "action", "properties", "role", "enum"},
	}
	for group, path := range cases {
		if len(consts[group]) < 3 {
			t.Fatalf("found only %v for %s in loop/types.go: the parser lost track of the constants", consts[group], group)
		}
		enum := enumOf(t, doc, path...)
		for _, c := range consts[group] {
			if !slices.Contains(enum, c) {
				t.Errorf("loop %s %q is missing from the JSON schema's enum at %s: document it in internal/ui/jsonentry.schema.json", group, c, strings.Join(path, "."))
			}
		}
		for _, e := range enum {
			if !slices.Contains(consts[group], e) {
				t.Errorf("the JSON schema lists %s %q, which the loop no longer has", group, e)
			}
		}
	}
}

// TestSchemaNamesEveryField keeps the schema's properties in step with the
// Go types the lines are encoded from.
func TestSchemaNamesEveryField(t *testing.T) {
	doc := schemaDoc(t)
	for name, c := range map[string]struct {
		typ  reflect.Type
		path []string
	}{
		"JSONEntry": {reflect.TypeOf(ui.JSONEntry{}), []string{"properties"}},
		"Action":    {reflect.TypeOf(loop.Action{}), []string{"$defs", "action", "properties"}},
		"Event":     {reflect.TypeOf(loop.Event{}), []string{"$defs", "event", "properties"}},
		"Gate":      {reflect.TypeOf(loop.GateSummary{}), []string{"$defs", "gate", "properties"}},
		"Usage":     {reflect.TypeOf(loop.Usage{}), []string{"$defs", "usage", "properties"}},
	} {
		props, _ := at(t, doc, c.path...).(map[string]any)
		for i := 0; i < c.typ.NumField(); i++ {
			tag := strings.Split(c.typ.Field(i).Tag.Get("json"), ",")[0]
			if tag == "" || tag == "-" {
				continue
			}
			if _, ok := props[tag]; !ok {
				t.Errorf("%s field %q is not in the JSON schema", name, tag)
			}
		}
	}
}

func compile(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(ui.JSONEntrySchema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("json-entry.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("json-entry.json")
	if err != nil {
		t.Fatalf("compile the schema: %v", err)
	}
	return sch
}

// TestJSONLinesMatchTheSchema prints a whole simulated run, plus the
// run-level and failure events it does not produce, and validates every
// line.
func TestJSONLinesMatchTheSchema(t *testing.T) {
	sch := compile(t)
	r := fixture.Simulate(fixture.Options{Tasks: 6, Jobs: 3, Revisions: 1, FailGates: []string{"t2"}, FailExecutor: []string{"t3"}})
	var buf bytes.Buffer
	p := ui.NewRunPrinter(&buf, true, func() time.Time { return time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC) })
	s := loop.New(r.Meta.RunID, r.Meta.Settings)
	seen := map[string]bool{}
	for _, rec := range r.Records {
		var e loop.Entry
		if rec.Kind == store.KindAction {
			e.Action = new(loop.Action)
			_ = json.Unmarshal(rec.Data, e.Action)
			s = loop.Issue(s, *e.Action)
		} else {
			e.Event = new(loop.Event)
			_ = json.Unmarshal(rec.Data, e.Event)
			s = loop.Apply(s, *e.Event)
		}
		seen[rec.Type] = true
		p.Entry(e, s)
	}
	extra := []loop.Event{
		{Type: loop.EvPaused, Reason: "the plan awaits approval"},
		{Type: loop.EvResumed, Budget: &loop.Budget{Tokens: 10, USD: 1.5}, Approve: true},
		{Type: loop.EvBudgetExhausted, Reason: "budget exhausted: 10 of 10 tokens used"},
		{ActionID: "task/t1/a1/merge", Type: loop.EvMergeConflict, Files: []string{"a.go"}, Detail: "CONFLICT"},
		{ActionID: "task/t1/a1/worktree", Type: loop.EvActionError, Detail: "git worktree add failed"},
		{ActionID: "approve/v1", Type: loop.EvUserAnswered, Approve: false},
	}
	for _, ev := range extra {
		p.Entry(loop.Entry{Event: &ev}, s)
	}
	p.Entry(loop.Entry{Action: &loop.Action{ID: "approve/v2", Type: loop.ActAsk, Question: "Approve?"}}, s)
	if !seen[string(loop.EvDelegationFail)] || !seen[string(loop.EvGatesEvaluated)] {
		t.Fatalf("the fixture should include failures and gates: %v", seen)
	}
	sc := bufio.NewScanner(&buf)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(sc.Bytes()))
		if err != nil {
			t.Fatalf("line %d is not JSON: %v", n, err)
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("line %d does not match the schema: %v\n%s", n, err, sc.Bytes())
		}
	}
	if n != len(r.Records)+len(extra)+1 {
		t.Fatalf("printed %d lines for %d entries", n, len(r.Records)+len(extra)+1)
	}
}

// TestSchemaRejectsWhatItShould guards against a schema that accepts
// anything.
func TestSchemaRejectsWhatItShould(t *testing.T) {
	sch := compile(t)
	for name, line := range map[string]string{
		"unknown event type": `{"time":"2026-11-30T12:00:00Z","kind":"event","event":{"type":"exploded"},"phase":"init","status":"running","tokens":0,"cost_usd":0}`,
		"both set":           `{"time":"2026-11-30T12:00:00Z","kind":"event","event":{"type":"paused"},"action":{"id":"x","type":"merge"},"phase":"init","status":"running","tokens":0,"cost_usd":0}`,
		"unknown field":      `{"time":"2026-11-30T12:00:00Z","kind":"action","action":{"id":"x","type":"merge","color":"red"},"phase":"init","status":"running","tokens":0,"cost_usd":0}`,
		"bad time":           `{"time":"noon","kind":"action","action":{"id":"x","type":"merge"},"phase":"init","status":"running","tokens":0,"cost_usd":0}`,
	} {
		v, _ := jsonschema.UnmarshalJSON(strings.NewReader(line))
		if err := sch.Validate(v); err == nil {
			t.Errorf("%s: the schema accepted %s", name, line)
		}
	}
}
