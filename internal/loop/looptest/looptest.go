// Package looptest holds what tests and benchmarks of the engines need to
// stand in for agents, as net/http/httptest does for servers.
package looptest

import (
	"encoding/json"

	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/plan"
)

// Output is the result of a delegation to role in a run where everything
// goes right: the planner returns p, the critic and the code reviewer
// approve, the executor completes, the verifier passes.
func Output(role string, p *plan.Plan) json.RawMessage {
	switch role {
	case loop.RolePlanner:
		out, _ := json.Marshal(map[string]any{"plan": p})
		return out
	case loop.RoleCritic, loop.RoleCodeReviewer:
		return json.RawMessage(`{"verdict":"APPROVE","findings":[]}`)
	case loop.RoleExecutor:
		return json.RawMessage(`{"status":"COMPLETE"}`)
	case loop.RoleVerifier:
		return json.RawMessage(`{"verdict":"PASS"}`)
	}
	return json.RawMessage(`{"summary":"ok"}`)
}
