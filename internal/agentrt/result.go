package agentrt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

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
