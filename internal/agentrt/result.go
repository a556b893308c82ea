package agentrt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ErrNoResultBlock says a text holds no RESULT block.
var ErrNoResultBlock = errors.New("no RESULT block found")

// OutputValidator checks a role's output against its contract: the JSON
// schema first, then the role's semantic checks.
type OutputValidator struct {
	schema   *Schema
	validate func(json.RawMessage) error
}

// NewOutputValidator compiles the output contract. validate may be nil.
func NewOutputValidator(schema json.RawMessage, validate func(json.RawMessage) error) (*OutputValidator, error) {
	s, err := CompileSchema("result", schema)
	if err != nil {
		return nil, fmt.Errorf("output contract: %w", err)
	}
	return &OutputValidator{schema: s, validate: validate}, nil
}

// Check validates an output and returns it in canonical form. A document
// wrapped in one key named like the seed's contracts ("executor_output: ...")
// or "result" is unwrapped when the wrapped value is what the schema wants.
func (v *OutputValidator) Check(output json.RawMessage) (json.RawMessage, error) {
	trimmed := bytes.TrimSpace(output)
	if len(trimmed) == 0 {
		return nil, errors.New("the result is empty")
	}
	err := v.check(trimmed)
	if err == nil {
		return trimmed, nil
	}
	if inner, ok := unwrapContract(trimmed); ok {
		if ierr := v.check(inner); ierr == nil {
			return inner, nil
		} else if _, isSchema := ierr.(schemaError); isSchema {
			// The wrapper was evidently meant as packaging: the inner
			// document's problems are the useful ones to report.
			return nil, ierr
		}
	}
	return nil, err
}

// schemaError marks a failure of the JSON schema (as opposed to the
// role's semantic checks).
type schemaError struct{ msg string }

func (e schemaError) Error() string { return e.msg }

func (v *OutputValidator) check(doc json.RawMessage) error {
	if err := v.schema.Validate(doc); err != nil {
		return schemaError{"the result does not match the output schema:\n" + err.Error()}
	}
	if v.validate != nil {
		if err := v.validate(doc); err != nil {
			return fmt.Errorf("the result fails the role's checks: %w", err)
		}
	}
	return nil
}

func unwrapContract(doc json.RawMessage) (json.RawMessage, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(doc, &m) != nil || len(m) != 1 {
		return nil, false
	}
	for k, inner := range m {
		if k == "result" || strings.HasSuffix(k, "_output") {
			return inner, true
		}
	}
	return nil, false
}

// ParseResultBlock finds the result in an agent's final text, for agents
// that cannot call submit_result. It accepts, last occurrence winning:
//
//   - a fenced block whose info string is "result";
//   - a fenced block (json, yaml, yml or no language) that follows a line
//     reading RESULT, in any of the forms "RESULT", "RESULT:", "## RESULT"
//     or "**RESULT**" (the seed's markdown form puts a ```yaml block under a
//     RESULT heading).
//
// The block's body is parsed as JSON, or failing that as YAML, and returned
// as JSON. ErrNoResultBlock means there is none.
func ParseResultBlock(text string) (json.RawMessage, error) {
	body, lang, ok := findResultBlock(text)
	if !ok {
		return nil, ErrNoResultBlock
	}
	if lang != "yaml" && lang != "yml" {
		var probe any
		if err := json.Unmarshal([]byte(body), &probe); err == nil {
			return json.RawMessage(strings.TrimSpace(body)), nil
		} else if lang == "json" {
			return nil, fmt.Errorf("the RESULT block is not valid JSON: %w", err)
		}
	}
	var v any
	if err := yaml.Unmarshal([]byte(body), &v); err != nil {
		return nil, fmt.Errorf("the RESULT block is neither JSON nor YAML: %w", err)
	}
	out, err := json.Marshal(jsonCompatible(v))
	if err != nil {
		return nil, fmt.Errorf("the RESULT block: %w", err)
	}
	return out, nil
}

// findResultBlock scans fenced blocks line by line and returns the body and
// language of the last one that qualifies as a result.
func findResultBlock(text string) (body, lang string, ok bool) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	afterResult := false // a RESULT line was seen and only blank lines since
	for i := 0; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if fence, info, isFence := openFence(line); isFence {
			end := -1
			for j := i + 1; j < len(lines); j++ {
				if strings.TrimSpace(lines[j]) == fence {
					end = j
					break
				}
			}
			if end < 0 {
				return body, lang, ok
			}
			info = strings.ToLower(info)
			if info == "result" || (afterResult && (info == "" || info == "json" || info == "yaml" || info == "yml")) {
				body, lang, ok = strings.Join(lines[i+1:end], "\n"), info, true
			}
			i = end
			afterResult = false
			continue
		}
		switch {
		case isResultLine(line):
			afterResult = true
		case line != "":
			afterResult = false
		}
	}
	return body, lang, ok
}

func openFence(line string) (fence, info string, ok bool) {
	for _, f := range []string{"```", "~~~"} {
		if strings.HasPrefix(line, f) {
			n := len(line) - len(strings.TrimLeft(line, f[:1]))
			fence = line[:n]
			info = strings.TrimSpace(line[n:])
			if i := strings.IndexAny(info, " \t{"); i >= 0 {
				info = info[:i]
			}
			return fence, info, true
		}
	}
	return "", "", false
}

func isResultLine(line string) bool {
	l := strings.TrimLeft(line, "#")
	l = strings.Trim(strings.TrimSpace(l), "*_:")
	return strings.EqualFold(strings.TrimSpace(l), "RESULT")
}

// jsonCompatible converts what yaml.Unmarshal produced into values that
// encoding/json can marshal (YAML allows non-string keys).
func jsonCompatible(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, e := range t {
			t[k] = jsonCompatible(e)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[fmt.Sprint(k)] = jsonCompatible(e)
		}
		return m
	case []any:
		for i, e := range t {
			t[i] = jsonCompatible(e)
		}
		return t
	default:
		return v
	}
}
