package temporal

import (
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/workflow"
)

// Registry is where a worker (or a test environment) registers workflows
// and activities; worker.Worker and testsuite.TestWorkflowEnvironment both
// are one.
type Registry interface {
	RegisterWorkflowWithOptions(w any, options workflow.RegisterOptions)
	RegisterActivityWithOptions(a any, options activity.RegisterOptions)
}

// Register puts the run workflow, the task child workflow and, when acts
// is not nil, the action activity on r under their stable names.
func Register(r Registry, acts *Activities) {
	r.RegisterWorkflowWithOptions(RunWorkflow, workflow.RegisterOptions{Name: WorkflowName})
	r.RegisterWorkflowWithOptions(TaskWorkflow, workflow.RegisterOptions{Name: TaskWorkflowName})
	if acts != nil {
		r.RegisterActivityWithOptions(acts.ExecuteAction, activity.RegisterOptions{Name: ActivityName})
	}
}
