package delegate

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

//go:embed schemas/*.json
var schemaFS embed.FS

// ErrUnknownRole is returned for a role that has no output contract.
var ErrUnknownRole = errors.New("unknown agent role")

// Contract names the output contract (seed 001 `*_output`) a role returns.
func Contract(role string) (string, error) {
	switch role {
	case RoleResearcher:
		return "research_output", nil
	case RolePlanner:
		return "planner_output", nil
	case RoleCritic:
		return "critic_output", nil
	case RoleExecutor:
		return "executor_output", nil
	case RoleVerifier:
		return "verifier_output", nil
	case RoleCodeReviewer, RoleLinting:
		return "review_output", nil
	case RoleArchitect, RoleTestDesigner, RoleDesignSpec:
		return "specialist_output", nil
	}
	return "", fmt.Errorf("%w %q (known: %s)", ErrUnknownRole, role, strings.Join(Roles(), ", "))
}

// compiledSchema is one contract's schema, compact for the wire and
// compiled for validation.
type compiledSchema struct {
	raw    json.RawMessage
	schema *jsonschema.Schema
}

// schemas compiles every embedded contract schema once. The result never
// changes after the first call.
var schemas = sync.OnceValues(func() (map[string]compiledSchema, error) {
	entries, err := schemaFS.ReadDir("schemas")
	if err != nil {
		return nil, fmt.Errorf("read embedded schemas: %w", err)
	}
	out := make(map[string]compiledSchema, len(entries))
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".json")
		data, err := schemaFS.ReadFile("schemas/" + e.Name())
		if err != nil {
			return nil, fmt.Errorf("read schema %s: %w", e.Name(), err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, data); err != nil {
			return nil, fmt.Errorf("schema %s is not JSON: %w", e.Name(), err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
		if err != nil {
			return nil, fmt.Errorf("schema %s: %w", e.Name(), err)
		}
		url := "sluice:///" + e.Name()
		if err := c.AddResource(url, doc); err != nil {
			return nil, fmt.Errorf("schema %s: %w", e.Name(), err)
		}
		sch, err := c.Compile(url)
		if err != nil {
			return nil, fmt.Errorf("compile schema %s: %w", e.Name(), err)
		}
		out[name] = compiledSchema{raw: json.RawMessage(compact.Bytes()), schema: sch}
	}
	return out, nil
})

func schemaFor(role string) (compiledSchema, string, error) {
	contract, err := Contract(role)
	if err != nil {
		return compiledSchema{}, "", err
	}
	all, err := schemas()
	if err != nil {
		return compiledSchema{}, "", err
	}
	s, ok := all[contract]
	if !ok {
		return compiledSchema{}, "", fmt.Errorf("no embedded schema for contract %s", contract)
	}
	return s, contract, nil
}

// Schema returns the JSON schema (draft 2020-12, compact) of the output
// contract of role: the input schema of its submit_result tool.
func Schema(role string) (json.RawMessage, error) {
	s, _, err := schemaFor(role)
	if err != nil {
		return nil, err
	}
	return append(json.RawMessage(nil), s.raw...), nil
}

// SubmitToolName is the tool every agent calls, once, to hand back its result.
const SubmitToolName = "submit_result"

// SubmitToolDescription is the description of the submit_result tool for
// role's contract.
func SubmitToolDescription(role string) (string, error) {
	contract, err := Contract(role)
	if err != nil {
		return "", err
	}
	return "Hand back your " + contract + " and end your turn. Call it once, when the work is done; " +
		"the result is validated and any problem is sent back to you once to fix.", nil
}
