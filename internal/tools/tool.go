// Package tools holds the tools an agent uses inside its worktree. Every path
// is confined to the worktree; .git/ and .sluice/ are off limits.
package tools

import (
	"context"
	"encoding/json"

	"github.com/sluice-run/sluice/internal/model"
)

// Tool is one tool offered to a model.
type Tool interface {
	// Spec is the tool's name, description and JSON schema for the model.
	Spec() model.Tool
	// ReadOnly reports whether the tool never changes anything, so calls to
	// it may run concurrently with other read-only calls.
	ReadOnly() bool
	// Call runs the tool. An error is shown to the model as a tool error
	// (is_error) and the conversation goes on; it never ends the run.
	Call(ctx context.Context, input json.RawMessage) (string, error)
}
