package delegate

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sluice-run/sluice/internal/plan"
)

// An executor cannot report gates as passed: the contract has no place for
// such a claim, so a result that makes one is rejected, and only the gates
// sluice runs itself decide (DESIGN §2: a model's words never pass a command
// clause).
func TestExecutorResultClaimingGatesIsRejected(t *testing.T) {
	task := &plan.Task{ID: "t1", AcceptanceCriteria: []string{"Two returns 2"}}
	good := map[string]any{
		"status":         "COMPLETE",
		"files_modified": []string{"two.go"},
		"acceptance_criteria_confirmation": []map[string]any{
			{"criterion": "Two returns 2", "met": true, "evidence": "two.go"},
		},
		"summary": "added Two",
	}
	raw, _ := json.Marshal(good)
	if _, err := Validate(RoleExecutor, raw, task); err != nil {
		t.Fatalf("the honest result must pass: %v", err)
	}
	for _, claim := range []string{"gates_passed", "quality_gates", "tests_passed"} {
		bad := map[string]any{}
		for k, v := range good {
			bad[k] = v
		}
		bad[claim] = map[string]any{"test": "passed", "format": "passed"}
		raw, _ := json.Marshal(bad)
		_, err := Validate(RoleExecutor, raw, task)
		if err == nil || !strings.Contains(err.Error(), claim) {
			t.Fatalf("a result claiming %s must be rejected naming it, got %v", claim, err)
		}
	}
}
