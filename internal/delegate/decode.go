package delegate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/sluice-run/sluice/internal/plan"
)

// ValidationError lists every problem found in one result, so the repair
// request can quote all of them at once.
type ValidationError struct {
	Role     string
	Problems []string
}

func (e *ValidationError) Error() string {
	if len(e.Problems) == 1 {
		return fmt.Sprintf("invalid %s result: %s", e.Role, e.Problems[0])
	}
	return fmt.Sprintf("invalid %s result: %d problems: %s", e.Role, len(e.Problems), strings.Join(e.Problems, "; "))
}

// Decode validates raw against role's schema and decodes it strictly into
// the role's type, returned as a pointer (*ExecutorOutput for "executor").
// raw may be the bare contract or the seed's wrapped form
// ({"executor_output": {...}}). Schema violations come back as a
// *ValidationError listing every one.
func Decode(role string, raw json.RawMessage) (any, error) {
	s, contract, err := schemaFor(role)
	if err != nil {
		return nil, err
	}
	raw = unwrap(raw, contract)
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, &ValidationError{Role: role, Problems: []string{"result is not a single JSON object: " + err.Error()}}
	}
	if err := s.schema.Validate(doc); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return nil, &ValidationError{Role: role, Problems: schemaProblems(ve)}
		}
		return nil, fmt.Errorf("validate %s result: %w", role, err)
	}
	out := newOutput(contract)
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(out); err != nil {
		return nil, &ValidationError{Role: role, Problems: []string{err.Error()}}
	}
	return out, nil
}

// Validate decodes raw and checks it against task: Decode then Check.
func Validate(role string, raw json.RawMessage, task *plan.Task) (any, error) {
	out, err := Decode(role, raw)
	if err != nil {
		return nil, err
	}
	if err := Check(role, out, task); err != nil {
		return nil, err
	}
	return out, nil
}

func newOutput(contract string) any {
	switch contract {
	case "research_output":
		return &ResearchOutput{}
	case "planner_output":
		return &PlannerOutput{}
	case "critic_output":
		return &CriticOutput{}
	case "executor_output":
		return &ExecutorOutput{}
	case "verifier_output":
		return &VerifierOutput{}
	case "review_output":
		return &ReviewOutput{}
	}
	return &SpecialistOutput{}
}

// unwrap strips the seed's wrapper key ({"executor_output": {...}}) when it
// is the object's only key.
func unwrap(raw json.RawMessage, contract string) json.RawMessage {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || len(m) != 1 {
		return raw
	}
	if inner, ok := m[contract]; ok {
		return inner
	}
	return raw
}

// schemaProblems flattens a schema validation error into one line per
// failed leaf, "at /path: message", sorted for stable output.
func schemaProblems(ve *jsonschema.ValidationError) []string {
	p := message.NewPrinter(language.English)
	var out []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			out = append(out, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(p)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	sort.Strings(out)
	return out
}

// RepairMessage is the one repair request sent to an agent whose result was
// invalid: it quotes every validation problem and asks for the whole result
// again.
func RepairMessage(errs error) string {
	var b strings.Builder
	b.WriteString("Your result was rejected. Problems:\n")
	var ve *ValidationError
	if errors.As(errs, &ve) {
		for _, p := range ve.Problems {
			b.WriteString("- " + p + "\n")
		}
	} else if errs != nil {
		b.WriteString("- " + errs.Error() + "\n")
	}
	b.WriteString("\nFix every problem above and submit the complete result again, the same way " +
		"(the submit_result tool, or a RESULT block if you have no tools). Keep what was right. " +
		"This is the only repair request: another invalid result fails the delegation.")
	return b.String()
}
