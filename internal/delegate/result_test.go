package delegate

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/sluice-run/sluice/internal/plan"
)

func TestSchemaEveryRole(t *testing.T) {
	for _, role := range Roles() {
		raw, err := Schema(role)
		if err != nil {
			t.Fatalf("%s: %v", role, err)
		}
		var s struct {
			Schema     string         `json:"$schema"`
			Type       string         `json:"type"`
			Additional *bool          `json:"additionalProperties"`
			Required   []string       `json:"required"`
			Properties map[string]any `json:"properties"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			t.Fatalf("%s: schema is not JSON: %v", role, err)
		}
		if s.Schema != "https://json-schema.org/draft/2020-12/schema" || s.Type != "object" {
			t.Errorf("%s: $schema=%q type=%q, want draft 2020-12 object", role, s.Schema, s.Type)
		}
		if s.Additional == nil || *s.Additional {
			t.Errorf("%s: top level allows unknown properties", role)
		}
		for _, r := range s.Required {
			if _, ok := s.Properties[r]; !ok {
				t.Errorf("%s: required %q is not a property", role, r)
			}
		}
		if strings.ContainsAny(string(raw), "\n\t") {
			t.Errorf("%s: schema is not compact", role)
		}
	}
	if _, err := Schema("poet"); !errors.Is(err, ErrUnknownRole) {
		t.Errorf("unknown role: err = %v, want ErrUnknownRole", err)
	}
}

// TestSchemaMatchesGoTypes checks that every property a schema allows
// decodes into the Go type: a sample holding every field round-trips
// through Decode unchanged.
func TestSchemaMatchesGoTypes(t *testing.T) {
	task := SampleTask()
	samples := map[string]any{
		RoleResearcher: SampleResearch(),
		RoleExecutor:   sampleExecutorResult(task),
		RoleVerifier: &VerifierOutput{Verdict: VerdictFail, Criteria: sampleExecutorResult(task).AcceptanceCriteriaConfirmation,
			Failures: []string{"x"}, FixInstructions: "y", ReviewDepth: "full"},
		RolePlanner: &PlannerOutput{Plan: plan.Plan{Goal: "g", Tasks: []plan.Task{*task}, PreMortem: []string{"p"}},
			TaskCount: 1, EstimatedTotalEffort: "1 medium", CriticalRisks: []string{"r"}},
		RoleCritic: &CriticOutput{Verdict: VerdictApprove, Objection: "o", ObjectionCategory: "gap", Severity: "minor", SuggestedFix: "f",
			SpecificationCompliance: SpecificationCompliance{Compliant: false, Violations: []string{"v"}},
			EndGameSynthesis:        &EndGameSynthesis{ResilienceVerdict: "robust", StrongestArguments: []string{"a"}, RemainingVulnerabilities: []string{"b"}, OverallAssessment: "c"}},
		RoleCodeReviewer: &ReviewOutput{Verdict: VerdictChangesRequested, Findings: []Finding{{Severity: "major", File: "a.go", Line: 3, Issue: "i", SuggestedFix: "s"}}, Summary: "s"},
		RoleArchitect:    &SpecialistOutput{Document: "# Design", Summary: "s"},
	}
	samples[RoleResearcher].(*ResearchOutput).ContextMap.SecondaryFiles = []FileRole{{Path: "a", Role: "b"}}
	samples[RoleResearcher].(*ResearchOutput).ContextMap.TestFiles = []TestFile{{Path: "a", Coverage: "b"}}
	samples[RoleResearcher].(*ResearchOutput).ContextMap.SuggestedSequence = []string{"a"}
	samples[RoleResearcher].(*ResearchOutput).Findings = Findings{ArchitectureNotes: "n", Dependencies: []string{"d"}, Constraints: []string{"c"}, Risks: []string{"r"}}
	samples[RoleExecutor].(*ExecutorOutput).FilesDeleted = []string{"old.ts"}
	for role, want := range samples {
		raw, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Decode(role, raw)
		if err != nil {
			t.Fatalf("%s: %v\n%s", role, err, raw)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: round trip changed the value:\n got %+v\nwant %+v", role, got, want)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	cases := []struct {
		name, role, raw string
		want            []string
	}{
		{"unknown field", RoleExecutor, `{"status":"COMPLETE","files_modified":[],"acceptance_criteria_confirmation":[],"summary":"s","mood":"good"}`, []string{"mood"}},
		{"bad enum and missing field", RoleExecutor, `{"status":"DONE","files_modified":[],"acceptance_criteria_confirmation":[]}`, []string{"/status", "summary"}},
		{"nested type", RoleVerifier, `{"verdict":"PASS","criteria":[{"criterion":"a","met":"yes","evidence":"e"}],"failures":[],"fix_instructions":""}`, []string{"/criteria/0/met"}},
		{"planner task without criteria", RolePlanner, `{"plan":{"tasks":[{"id":"t1","title":"t","description":"d","acceptance_criteria":[]}]},"task_count":1,"estimated_total_effort":"","critical_risks":[]}`, []string{"/plan/tasks/0/acceptance_criteria"}},
		{"not JSON", RoleCritic, `verdict: APPROVE`, []string{"not a single JSON object"}},
	}
	for _, c := range cases {
		_, err := Decode(c.role, json.RawMessage(c.raw))
		var ve *ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: err = %v, want *ValidationError", c.name, err)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not mention %q", c.name, err, w)
			}
		}
	}
}

func TestDecodeAcceptsSeedWrapper(t *testing.T) {
	flat := `{"document":"# D","summary":"s"}`
	a, err := Decode(RoleDesignSpec, json.RawMessage(flat))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Decode(RoleDesignSpec, json.RawMessage(`{"specialist_output":`+flat+`}`))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Errorf("wrapped %v != flat %v", b, a)
	}
}

func TestCheckExecutorMissingCriterion(t *testing.T) {
	task := SampleTask()
	out := sampleExecutorResult(task)
	missing := out.AcceptanceCriteriaConfirmation[2].Criterion
	out.AcceptanceCriteriaConfirmation = append(out.AcceptanceCriteriaConfirmation[:2], out.AcceptanceCriteriaConfirmation[3:]...)
	raw, _ := json.Marshal(out)
	_, err := Validate(RoleExecutor, raw, task)
	var ve *ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("err = %v, want *ValidationError", err)
	}
	if len(ve.Problems) != 1 || !strings.Contains(ve.Problems[0], missing) || !strings.Contains(ve.Problems[0], "not confirmed") {
		t.Errorf("problems = %q, want exactly one naming %q", ve.Problems, missing)
	}
}

func TestCheckCriteria(t *testing.T) {
	task := SampleTask()
	good := sampleExecutorResult(task)
	if err := Check(RoleExecutor, good, task); err != nil {
		t.Fatalf("complete result rejected: %v", err)
	}
	// Re-wrapped criteria still match.
	rewrapped := sampleExecutorResult(task)
	rewrapped.AcceptanceCriteriaConfirmation[0].Criterion = "  GET /api/search?q=test&page=1&page_size=10\n returns 200 with {  results: [], total: number, page: number }"
	if err := Check(RoleExecutor, *rewrapped, task); err != nil {
		t.Errorf("whitespace-only difference rejected: %v", err)
	}

	paraphrased := sampleExecutorResult(task)
	paraphrased.AcceptanceCriteriaConfirmation[1].Criterion = "Missing q returns 400"
	paraphrased.AcceptanceCriteriaConfirmation[3].Evidence = " "
	paraphrased.Status = StatusComplete
	paraphrased.AcceptanceCriteriaConfirmation[0].Met = false
	err := Check(RoleExecutor, paraphrased, task)
	for _, want := range []string{
		`"Missing q returns 400" is not an acceptance criterion`,
		`"Missing query parameter returns 400 with { error: 'Query parameter q is required' }" is not confirmed`,
		`"Route registered in src/config/routes.ts with auth middleware" has no evidence`,
		"status is COMPLETE but criterion",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant it to contain %s", err, want)
		}
	}

	dup := sampleExecutorResult(task)
	dup.AcceptanceCriteriaConfirmation = append(dup.AcceptanceCriteriaConfirmation, dup.AcceptanceCriteriaConfirmation[0])
	if err := Check(RoleExecutor, dup, task); err == nil || !strings.Contains(err.Error(), "more than once") {
		t.Errorf("duplicate confirmation: err = %v", err)
	}
	if err := Check(RoleExecutor, good, nil); err == nil {
		t.Error("executor check without a task passed")
	}
	if err := Check(RoleExecutor, &VerifierOutput{}, task); err == nil {
		t.Error("a verifier output passed as an executor output")
	}
}

func TestCheckVerifier(t *testing.T) {
	task := SampleTask()
	crit := sampleExecutorResult(task).AcceptanceCriteriaConfirmation
	pass := &VerifierOutput{Verdict: VerdictPass, Criteria: crit, Failures: []string{}}
	if err := Check(RoleVerifier, pass, task); err != nil {
		t.Fatalf("clean PASS rejected: %v", err)
	}
	contradictory := &VerifierOutput{Verdict: VerdictPass, Criteria: append([]Confirmation(nil), crit...)}
	contradictory.Criteria[2].Met = false
	if err := Check(RoleVerifier, contradictory, task); err == nil || !strings.Contains(err.Error(), "verdict is PASS but criterion \"page_size > 100") {
		t.Errorf("PASS with an unmet criterion: err = %v", err)
	}
	fail := &VerifierOutput{Verdict: VerdictFail, Criteria: crit[:3]}
	err := Check(RoleVerifier, fail, task)
	for _, want := range []string{"failures is empty", "fix_instructions is empty", `"Route registered in src/config/routes.ts with auth middleware" is not confirmed`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("FAIL without failures: err = %v, want %q", err, want)
		}
	}
}

func TestCheckPlanner(t *testing.T) {
	t1 := *SampleTask()
	t1.DependsOn = nil
	t2 := plan.Task{ID: "task-004", Title: "t", Description: "d", DependsOn: []string{"task-999"}, AcceptanceCriteria: []string{"x"}}
	out := &PlannerOutput{Plan: plan.Plan{Tasks: []plan.Task{t1, t2}}, TaskCount: 3}
	err := Check(RolePlanner, out, nil)
	for _, want := range []string{"task_count is 3 but the plan has 2 tasks", "task-999"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	out.TaskCount = 2
	out.Plan.Tasks[1].DependsOn = []string{"task-003"}
	if err := Check(RolePlanner, out, nil); err != nil {
		t.Errorf("valid plan rejected: %v", err)
	}
}

func TestCheckCriticAndReview(t *testing.T) {
	if err := Check(RoleCritic, &CriticOutput{Verdict: VerdictRevise}, nil); err == nil || !strings.Contains(err.Error(), "objection is empty") {
		t.Errorf("REVISE without objection: err = %v", err)
	}
	if err := Check(RoleCritic, &CriticOutput{Verdict: VerdictRevise, Objection: "o"}, nil); err != nil {
		t.Errorf("REVISE with objection: %v", err)
	}
	if err := Check(RoleCritic, &CriticOutput{Verdict: VerdictApprove}, nil); err == nil {
		t.Error("APPROVE without end_game_synthesis passed")
	}
	if err := Check(RoleCodeReviewer, &ReviewOutput{Verdict: VerdictChangesRequested}, nil); err == nil {
		t.Error("CHANGES_REQUESTED without findings passed")
	}
	if err := Check(RoleLinting, &ReviewOutput{Verdict: VerdictApprove, Findings: []Finding{{Severity: SeverityBlocking, File: "a", Issue: "b"}}}, nil); err == nil {
		t.Error("APPROVE with a blocking finding passed")
	}
}

// seedReply is an agent's closing text in seed 001's markdown form.
const seedReply = "I implemented the endpoint.\n\n## RESULT\n\n```yaml\nexecutor_output:\n" +
	"  status: COMPLETE\n" +
	"  files_modified: [\"src/api/handlers/search.ts\", \"src/types/api.ts\", \"src/config/routes.ts\"]\n" +
	"  files_deleted: []\n" +
	"  acceptance_criteria_confirmation:\n" +
	"    - criterion: \"GET /api/search?q=test&page=1&page_size=10 returns 200 with { results: [], total: number, page: number }\"\n" +
	"      met: true\n" +
	"      evidence: \"search.ts:14 returns res.json({ results, total, page })\"\n" +
	"    - criterion: \"Missing query parameter returns 400 with { error: 'Query parameter q is required' }\"\n" +
	"      met: true\n" +
	"      evidence: zod rejects a missing q (search.test.ts 'missing q')\n" +
	"    - criterion: \"page_size > 100 returns 400 with { error: 'page_size must be between 1 and 100' }\"\n" +
	"      met: true\n" +
	"      evidence: z.number().min(1).max(100) at search.ts:9\n" +
	"    - criterion: Route registered in src/config/routes.ts with auth middleware\n" +
	"      met: true\n" +
	"      evidence: routes.ts:22 router.get('/api/search', auth, search)\n" +
	"  summary: |\n    Created search endpoint following users.ts.\n    Zod validation, Prisma query.\n" +
	"  warnings:\n    - \"Search query does exact match: may need full-text search\"\n" +
	"```\n"

const toolCallInput = `{"status":"COMPLETE","files_modified":["src/api/handlers/search.ts","src/types/api.ts","src/config/routes.ts"],"files_deleted":[],` +
	`"acceptance_criteria_confirmation":[` +
	`{"criterion":"GET /api/search?q=test&page=1&page_size=10 returns 200 with { results: [], total: number, page: number }","met":true,"evidence":"search.ts:14 returns res.json({ results, total, page })"},` +
	`{"criterion":"Missing query parameter returns 400 with { error: 'Query parameter q is required' }","met":true,"evidence":"zod rejects a missing q (search.test.ts 'missing q')"},` +
	`{"criterion":"page_size > 100 returns 400 with { error: 'page_size must be between 1 and 100' }","met":true,"evidence":"z.number().min(1).max(100) at search.ts:9"},` +
	`{"criterion":"Route registered in src/config/routes.ts with auth middleware","met":true,"evidence":"routes.ts:22 router.get('/api/search', auth, search)"}],` +
	`"summary":"Created search endpoint following users.ts.\nZod validation, Prisma query.\n","warnings":["Search query does exact match: may need full-text search"]}`

func TestResultBlockAndToolCallParseEqual(t *testing.T) {
	task := SampleTask()
	raw, err := ParseResultBlock(seedReply)
	if err != nil {
		t.Fatal(err)
	}
	fromText, err := Validate(RoleExecutor, raw, task)
	if err != nil {
		t.Fatalf("RESULT block: %v", err)
	}
	fromTool, err := Validate(RoleExecutor, json.RawMessage(toolCallInput), task)
	if err != nil {
		t.Fatalf("tool call: %v", err)
	}
	if !reflect.DeepEqual(fromText, fromTool) {
		t.Errorf("RESULT block and tool call differ:\ntext %+v\ntool %+v", fromText, fromTool)
	}
}

func TestParseResultBlockForms(t *testing.T) {
	body := "verdict: REVISE\nobjection: \"no task covers limits\"\nspecification_compliance: {compliant: true}\n"
	jsonBody := `{"verdict":"REVISE","objection":"no task covers limits","specification_compliance":{"compliant":true}}`
	want := `{"verdict":"REVISE","objection":"no task covers limits","specification_compliance":{"compliant":true}}`
	forms := map[string]string{
		"heading yaml":        "Done.\n\n## RESULT\n```yaml\n" + body + "```\n",
		"bold line json":      "**RESULT:**\n\n```json\n" + jsonBody + "\n```",
		"plain line bare":     "RESULT\n```\n" + body + "```",
		"info string result":  "Here it is.\n```result\n" + body + "```\n",
		"tilde fence":         "### Result\n~~~yaml\n" + body + "~~~\n",
		"contract key only":   "```yaml\ncritic_output:\n  verdict: REVISE\n```\n",
		"last of two results": "## RESULT\n```yaml\nverdict: APPROVE\n```\nOn reflection:\n## RESULT\n```yaml\n" + body + "```\n",
	}
	for name, text := range forms {
		got, err := ParseResultBlock(text)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		w := want
		if name == "contract key only" {
			w = `{"critic_output":{"verdict":"REVISE"}}`
		}
		if string(got) != w {
			t.Errorf("%s: got %s, want %s", name, got, w)
		}
	}
	// An unlabelled code block in the reply is not a result.
	if _, err := ParseResultBlock("I ran:\n```bash\ngo test ./...\n```\nall good"); !errors.Is(err, ErrNoResult) {
		t.Errorf("no RESULT block: err = %v, want ErrNoResult", err)
	}
	if _, err := ParseResultBlock("## RESULT\n```yaml\nverdict: [unclosed\n```"); err == nil || !strings.Contains(err.Error(), "line 2") {
		t.Errorf("broken YAML: err = %v, want one naming the block's line", err)
	}
	// Values YAML would read as other types keep their JSON types.
	got, err := ParseResultBlock("```result\nline: 0x1F\nmet: true\nwhen: 2026-11-30\nn: ~\nf: 1.5\n```")
	if err != nil || string(got) != `{"line":31,"met":true,"when":"2026-11-30","n":null,"f":1.5}` {
		t.Errorf("scalars: %s, %v", got, err)
	}
}

func TestRepairMessageQuotesEveryProblem(t *testing.T) {
	task := SampleTask()
	_, err := Validate(RoleExecutor, json.RawMessage(`{"status":"COMPLETE","files_modified":[],"acceptance_criteria_confirmation":[],"summary":"s"}`), task)
	msg := RepairMessage(err)
	for _, c := range task.AcceptanceCriteria {
		if !strings.Contains(msg, c) {
			t.Errorf("repair message does not quote the missing criterion %q:\n%s", c, msg)
		}
	}
	if !strings.Contains(msg, "submit") {
		t.Error("repair message does not ask for the result again")
	}
	if got := RepairMessage(errors.New("boom")); !strings.Contains(got, "- boom") {
		t.Errorf("plain error not quoted: %s", got)
	}
}

// TestReasonsAgentRuntimeStrings pins the strings the agent runtime uses.
func TestReasonsAgentRuntimeStrings(t *testing.T) {
	for _, s := range []string{"max_turns", "token_limit", "deadline", "no_result", "invalid_result", "model_error", "budget", "cancelled"} {
		if !Reason(s).Valid() {
			t.Errorf("%q is not in the vocabulary", s)
		}
	}
	seen := map[Reason]bool{}
	for _, r := range Reasons() {
		if r.Meaning() == "" || seen[r] {
			t.Errorf("%q: missing meaning or listed twice", r)
		}
		seen[r] = true
	}
	if Reason("timeout").Valid() {
		t.Error("an unknown reason is valid")
	}
}

func TestSubmitToolDescription(t *testing.T) {
	d, err := SubmitToolDescription(RoleVerifier)
	if err != nil || !strings.Contains(d, "verifier_output") {
		t.Errorf("description = %q, %v", d, err)
	}
}

func TestParseResultBlockAliasBomb(t *testing.T) {
	bomb := "```result\na: &a [x, x, x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\nd: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\ne: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\nf: [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n```"
	if _, err := ParseResultBlock(bomb); err == nil {
		t.Error("an alias bomb expanded without limit")
	} else if !strings.Contains(err.Error(), "more than") {
		t.Errorf("err = %v, want the node limit", err)
	}
}
