package agentrt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Schema is a compiled JSON schema used to check tool arguments and results.
type Schema struct {
	sch *jsonschema.Schema
}

// CompileSchema compiles a JSON schema document. name identifies the schema
// in errors (a tool name, or "result").
func CompileSchema(name string, schema json.RawMessage) (*Schema, error) {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil, fmt.Errorf("schema %s: empty schema", name)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return nil, fmt.Errorf("schema %s: not valid JSON: %w", name, err)
	}
	c := jsonschema.NewCompiler()
	// Schemas come from tools and role contracts, never from the network:
	// a $ref to anything outside the document fails to compile rather than
	// being fetched.
	c.UseLoader(refusingLoader{})
	url := "mem://sluice/" + name + ".json"
	if err := c.AddResource(url, doc); err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("schema %s: %w", name, err)
	}
	return &Schema{sch: sch}, nil
}

type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("schema reference %q: external references are not loaded", url)
}

// Validate checks a JSON document against the schema. The error lists every
// violation, one per line, with its location in the document, so that it can
// be quoted back to a model.
func (s *Schema) Validate(doc json.RawMessage) error {
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return fmt.Errorf("not valid JSON: %w", err)
	}
	if err := s.sch.Validate(v); err != nil {
		var ve *jsonschema.ValidationError
		if errors.As(err, &ve) {
			return errors.New(formatValidation(ve))
		}
		return err
	}
	return nil
}

// formatValidation flattens a validation error tree into lines
// "at /path: message", dropping the schema URLs that mean nothing to a model.
func formatValidation(ve *jsonschema.ValidationError) string {
	p := message.NewPrinter(language.English)
	var lines []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			lines = append(lines, fmt.Sprintf("at %s: %s", loc, e.ErrorKind.LocalizedString(p)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	if len(lines) == 0 {
		return ve.Error()
	}
	return strings.Join(lines, "\n")
}
