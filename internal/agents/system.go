package agents

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/sluice-run/sluice/internal/delegate"
	"github.com/sluice-run/sluice/internal/model"
)

// Contribution is text a capability contributes to the system prompt of
// one role (seed 003).
type Contribution struct {
	Capability string
	// Into is the agent role that receives it.
	Into string
	Text string
}

// System returns the stable prefix of a delegation's system prompt, the same
// for every delegation of the role in a run so that provider prompt caching
// hits: the agent's prompt, then the project instructions, then each
// capability contribution whose Into is the agent's role, in a block naming
// its capability (the format of capability.Render), in the order given:
// capability.ForDelegation's order, which is deterministic. The last part
// carries the cache mark.
func System(a Agent, instructions string, contributions []Contribution) []model.TextPart {
	parts := []model.TextPart{{Text: a.Prompt}}
	if s := strings.TrimSpace(instructions); s != "" {
		parts = append(parts, model.TextPart{Text: "# Project instructions\n\n" + s})
	}
	var mine []Contribution
	for _, c := range contributions {
		if c.Into == a.Role && strings.TrimSpace(c.Text) != "" {
			mine = append(mine, c)
		}
	}
	for _, c := range mine {
		parts = append(parts, model.TextPart{Text: fmt.Sprintf("<capability name=%q>\n%s\n</capability>", c.Capability, strings.TrimSpace(c.Text))})
	}
	parts[len(parts)-1].Cache = true
	return parts
}

// Tokens estimates the tokens of s as bytes/4, rounded up: close to what
// BPE tokenizers give for English prose and code, and deliberately
// dependency-free. It is an estimate for budgets and reports, not billing.
func Tokens(s string) int { return (len(s) + 3) / 4 }

// Prompt is what one delegation sends: the stable system prefix, then the
// volatile delegation message.
type Prompt struct {
	System  []model.TextPart
	Message string
}

// Compose builds the prompt of a delegation of agent a: System(a, ...) and
// the delegation message delegate.Compose(in). in.Role defaults to a.Role.
func Compose(a Agent, instructions string, contributions []Contribution, in delegate.Input) (Prompt, error) {
	if in.Role == "" {
		in.Role = a.Role
	}
	msg, err := delegate.Compose(in)
	if err != nil {
		return Prompt{}, err
	}
	return Prompt{System: System(a, instructions, contributions), Message: msg}, nil
}

// Request lays the prompt out as a model request: tools first, then the
// system prompt, then the delegation as the first user message, which is
// the order providers cache prefixes in.
func (p Prompt) Request(modelName string, tools []model.Tool, maxTokens int) model.Request {
	return model.Request{
		Model:     modelName,
		Tools:     tools,
		System:    p.System,
		Messages:  []model.Message{{Role: model.RoleUser, Content: []model.Block{{Type: model.BlockText, Text: p.Message}}}},
		MaxTokens: maxTokens,
	}
}

// Size is an agent's fixed footprint in estimated tokens (see Tokens).
type Size struct {
	Prompt int
	// Contract is the output schema plus the submit_result tool's name and
	// description.
	Contract int
	// ToolDescriptions counts the name and description of every other tool.
	ToolDescriptions int
	// ToolSchemas counts the tools' input schemas; reported, not budgeted.
	ToolSchemas int
}

// Total is the budgeted footprint: prompt, contract and tool descriptions.
func (s Size) Total() int { return s.Prompt + s.Contract + s.ToolDescriptions }

// Budget is the most tokens an agent's Size.Total may reach.
const Budget = 1500

// Footprint measures agent a with the tool specs it will be given (tools
// not named in a.Tools are left out).
func Footprint(a Agent, tools []model.Tool) (Size, error) {
	schema, err := delegate.Schema(a.Role)
	if err != nil {
		return Size{}, err
	}
	desc, err := delegate.SubmitToolDescription(a.Role)
	if err != nil {
		return Size{}, err
	}
	s := Size{
		Prompt:   Tokens(a.Prompt),
		Contract: Tokens(string(schema)) + Tokens(delegate.SubmitToolName+desc),
	}
	for _, t := range tools {
		if !slices.Contains(a.Tools, t.Name) {
			continue
		}
		s.ToolDescriptions += Tokens(t.Name + t.Description)
		var buf bytes.Buffer
		if err := json.Compact(&buf, t.Schema); err != nil {
			return Size{}, fmt.Errorf("tool %s: input schema is not JSON: %w", t.Name, err)
		}
		s.ToolSchemas += Tokens(buf.String())
	}
	return s, nil
}
