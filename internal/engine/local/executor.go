// Package local carries out the loop's actions on this machine: agent
// delegations through the agent runtime, worktrees and merges through real
// git, and quality gates as real processes.
package local

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/sluice-run/sluice/internal/agentrt"
	"github.com/sluice-run/sluice/internal/agents"
	"github.com/sluice-run/sluice/internal/backend"
	"github.com/sluice-run/sluice/internal/capability"
	"github.com/sluice-run/sluice/internal/delegate"
	"github.com/sluice-run/sluice/internal/gates"
	"github.com/sluice-run/sluice/internal/gitx"
	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/model"
	"github.com/sluice-run/sluice/internal/redact"
	"github.com/sluice-run/sluice/internal/store"
	"github.com/sluice-run/sluice/internal/tools"
)

// Models picks the provider and model for a role and prices a call.
type Models interface {
	ForRole(role string) (p model.Provider, modelName, tier string, err error)
	Cost(modelName string, u model.Usage) float64
}

// Activity is a live progress note for the display: what a task's agent is
// doing right now.
type Activity struct {
	ActionID string
	TaskID   string
	Role     string
	Tool     string
	Tokens   int64
}

// Executor implements engine.Executor with real components.
type Executor struct {
	RunID string
	Repo  *gitx.Repo
	Run   *store.Run
	// BaseSHA is the commit the run started from (the user's HEAD).
	BaseSHA      string
	WorktreesDir string
	// Integration is the worktree checked out on the run branch.
	Integration string
	Identity    gitx.Identity
	Gates       []gates.Command
	GateRunner  *gates.Runner
	Models      Models
	Agents      *agents.Registry
	// Instructions is the project instructions text (CLAUDE.md, AGENTS.md).
	Instructions string
	Redactor     *redact.Redactor
	// Tools is the template for every delegation's tools; Root and
	// ReadOnly are set per delegation.
	Tools    tools.Options
	Budget   *Budget
	MaxTurns int
	// ContextWindow and MaxOutputTokens size each delegation.
	ContextWindow   int
	MaxOutputTokens int
	// Ask puts a question to a person; answered is false when no one can
	// answer (no terminal), and the run pauses instead.
	Ask func(ctx context.Context, question string) (approve, answered bool)
	// Activity, when set, receives live progress. It must not block.
	Activity func(Activity)

	// Capabilities are the run's active capabilities; their contributions
	// go into the prompts of the roles they name.
	Capabilities []capability.Capability
	// CapabilityConfig is capabilities.config from the configuration.
	CapabilityConfig map[string]map[string]any
	Schedule         string
	// MCPTools are the tools of the project's MCP servers, offered to the
	// roles in MCPRoles.
	MCPTools []tools.Tool
	MCPRoles []string
	// Closer, when set, is closed with the executor (the MCP servers).
	Closer io.Closer

	// Backend runs delegations through a coding-agent CLI (claude-code,
	// codex); nil runs sluice's own tool loop (the api backend).
	Backend backend.Runner
	// FinalGates are run on the merged integration branch in addition to
	// Gates (capability gates at execute:post and complete).
	FinalGates []gates.Command

	baselineOnce sync.Once
	baseline     map[string]gates.Result
}

// Close stops what the executor started for the run (MCP servers).
func (x *Executor) Close() error {
	if x.Closer == nil {
		return nil
	}
	return x.Closer.Close()
}

// Execute carries out one action. Errors become events: a task action that
// fails fails its attempt; nothing here panics the run.
func (x *Executor) Execute(ctx context.Context, s loop.State, a loop.Action) loop.Event {
	switch a.Type {
	case loop.ActBaseline:
		return x.runBaseline(ctx, a)
	case loop.ActDelegate:
		return x.delegate(ctx, s, a)
	case loop.ActAsk:
		if x.Ask != nil {
			if approve, answered := x.Ask(ctx, a.Question); answered {
				return loop.Event{Type: loop.EvUserAnswered, Approve: approve}
			}
		}
		return loop.Event{Type: loop.EvPaused, Reason: "the plan awaits approval: read plan.md, then run `sluice resume --yes` to approve it"}
	case loop.ActWorktree:
		return x.prepareWorktree(ctx, a)
	case loop.ActGates:
		return x.evaluateTask(ctx, s, a)
	case loop.ActMerge:
		return x.merge(ctx, s, a)
	case loop.ActFinalVerify:
		return x.finalVerify(ctx)
	case loop.ActPoint:
		return x.firePoint(ctx, a)
	}
	return loop.Event{Type: loop.EvActionError, Detail: fmt.Sprintf("unknown action type %q", a.Type)}
}

func actionError(err error) loop.Event {
	return loop.Event{Type: loop.EvActionError, Detail: err.Error()}
}

// TaskWorktree is where this executor checks out a task attempt.
func (x *Executor) TaskWorktree(taskID string, attempt int) string {
	return filepath.Join(x.WorktreesDir, fmt.Sprintf("%s-a%d", taskID, attempt))
}

func artifactName(actionID string) string {
	return strings.ReplaceAll(actionID, "/", "_")
}

// --- baseline -------------------------------------------------------------

func (x *Executor) runBaseline(ctx context.Context, a loop.Action) loop.Event {
	files, err := x.Repo.TrackedFiles(ctx, x.Integration)
	if err != nil {
		return actionError(fmt.Errorf("list tracked files for the baseline: %w", err))
	}
	tree, err := x.Repo.TreeHash(ctx, x.BaseSHA)
	if err != nil {
		return actionError(err)
	}
	results := x.GateRunner.Run(ctx, x.Integration, x.Gates, files, tree)
	if err := ctx.Err(); err != nil {
		return actionError(err)
	}
	data, _ := json.MarshalIndent(results, "", "  ")
	if err := x.Run.WriteFile("artifacts/baseline.json", data); err != nil {
		return actionError(err)
	}
	x.setBaseline(results)
	var failing []string
	for _, r := range results {
		if !r.Passed && !r.Skipped {
			failing = append(failing, describeFailure(r))
		}
	}
	detail := "every gate passes on the base commit"
	if len(failing) > 0 {
		detail = "pre-existing failures on the base commit (tasks are held to no worse): " + strings.Join(failing, "; ")
	}
	return loop.Event{Type: loop.EvBaselineDone, Detail: detail}
}

// describeFailure names a failed gate and, where known, what failed in it.
func describeFailure(r gates.Result) string {
	if len(r.FailingTests) == 0 {
		return r.Name
	}
	what := "tests"
	if r.PerFile {
		what = "files"
	}
	names := r.FailingTests
	if len(names) > 5 {
		names = append(append([]string(nil), names[:5]...), fmt.Sprintf("and %d more", len(r.FailingTests)-5))
	}
	return fmt.Sprintf("%s (%s: %s)", r.Name, what, strings.Join(names, ", "))
}

func (x *Executor) setBaseline(results []gates.Result) {
	x.baselineOnce.Do(func() {
		x.baseline = map[string]gates.Result{}
		for _, r := range results {
			x.baseline[r.Name] = r
		}
	})
}

// loadBaseline reads the T0 results written by an earlier process (resume).
func (x *Executor) loadBaseline() map[string]gates.Result {
	x.baselineOnce.Do(func() {
		x.baseline = map[string]gates.Result{}
		data, err := os.ReadFile(filepath.Join(x.Run.Dir(), "artifacts", "baseline.json"))
		if err != nil {
			return
		}
		var results []gates.Result
		if json.Unmarshal(data, &results) == nil {
			for _, r := range results {
				x.baseline[r.Name] = r
			}
		}
	})
	return x.baseline
}

// judge holds each result to "no worse than the baseline".
func (x *Executor) judge(results []gates.Result) (bool, []loop.GateSummary) {
	base := x.loadBaseline()
	pass := true
	var out []loop.GateSummary
	for _, r := range results {
		g := loop.GateSummary{Name: r.Name, Command: r.Command, Passed: r.Passed, Skipped: r.Skipped, OutputTail: r.OutputTail}
		if !r.Passed && !r.Skipped {
			if t0, ok := baselineOf(base, r); ok {
				v := gates.Judge(t0, r)
				g.Passed = v.Pass
				g.Note = v.Reason
			}
		}
		if !g.Passed && !g.Skipped {
			pass = false
		}
		out = append(out, g)
	}
	return pass, out
}

// baselineOf finds the T0 result of a gate: by name, or else by command
// (the final gates of the integration branch run the task gates' commands
// under other names).
func baselineOf(base map[string]gates.Result, r gates.Result) (gates.Result, bool) {
	if t0, ok := base[r.Name]; ok {
		return t0, true
	}
	for _, t0 := range base {
		if t0.Command == r.Command {
			return t0, true
		}
	}
	return gates.Result{}, false
}

// --- worktrees, gates, merges -------------------------------------------

func (x *Executor) prepareWorktree(ctx context.Context, a loop.Action) loop.Event {
	base, err := x.Repo.BranchSHA(ctx, loop.IntegrationBranch(x.RunID))
	if err != nil {
		return actionError(err)
	}
	if a.Attempt > 1 {
		// The previous attempt's worktree is of no further use.
		_ = x.Repo.RemoveWorktree(ctx, x.TaskWorktree(a.TaskID, a.Attempt-1))
	}
	path := x.TaskWorktree(a.TaskID, a.Attempt)
	if err := x.Repo.AddWorktree(ctx, path, a.Branch, base); err != nil {
		return actionError(err)
	}
	// A worktree that survived a crash keeps the base its branch was
	// created at (nothing is committed on it before the gates stage).
	if sha, err := x.Repo.BranchSHA(ctx, a.Branch); err == nil {
		base = sha
	}
	return loop.Event{Type: loop.EvWorktreeReady, Base: base, Branch: a.Branch, Worktree: path}
}

func (x *Executor) evaluateTask(ctx context.Context, s loop.State, a loop.Action) loop.Event {
	t := s.Tasks[a.TaskID]
	head, _, err := x.Repo.CommitAll(ctx, t.Worktree, TaskCommitMessage(s, a.TaskID, a.Attempt), x.Identity)
	if err != nil {
		return actionError(err)
	}
	changed, err := x.Repo.ChangedFiles(ctx, t.Worktree, t.Base)
	if err != nil {
		return actionError(err)
	}
	ev := loop.Event{Type: loop.EvGatesEvaluated, Head: head, Changed: changed}
	if len(changed) == 0 {
		return ev
	}
	tree, err := x.Repo.TreeHash(ctx, head)
	if err != nil {
		return actionError(err)
	}
	results := x.GateRunner.Run(ctx, t.Worktree, x.Gates, changed, tree)
	if err := ctx.Err(); err != nil {
		return actionError(err)
	}
	ev.Passed, ev.Gates = x.judge(results)
	data, _ := json.MarshalIndent(results, "", "  ")
	_ = x.Run.WriteFile("artifacts/"+artifactName(a.ID)+".json", data)
	return ev
}

// TaskCommitMessage is the message of a task attempt's commit. With the
// run's fixed identity it makes the commit a function of the work, wherever
// it is made.
func TaskCommitMessage(s loop.State, taskID string, attempt int) string {
	return fmt.Sprintf("%s: %s (attempt %d)", taskID, taskTitle(s, taskID), attempt)
}

func taskTitle(s loop.State, id string) string {
	if s.Plan != nil {
		if t, ok := s.Plan.Task(id); ok {
			return t.Title
		}
	}
	return ""
}

func (x *Executor) merge(ctx context.Context, s loop.State, a loop.Action) loop.Event {
	t := s.Tasks[a.TaskID]
	msg := fmt.Sprintf("Merge %s: %s", a.TaskID, taskTitle(s, a.TaskID))
	sha, err := x.Repo.Merge(ctx, x.Integration, a.Branch, msg, x.Identity)
	var conflict *gitx.ConflictError
	if errors.As(err, &conflict) {
		return loop.Event{Type: loop.EvMergeConflict, Files: conflict.Files, Detail: conflict.Output}
	}
	if err != nil {
		return actionError(err)
	}
	_ = x.Repo.RemoveWorktree(ctx, t.Worktree)
	_ = x.Repo.DeleteBranch(ctx, a.Branch)
	return loop.Event{Type: loop.EvMerged, Head: sha}
}

func (x *Executor) finalVerify(ctx context.Context) loop.Event {
	head, err := x.Repo.BranchSHA(ctx, loop.IntegrationBranch(x.RunID))
	if err != nil {
		return actionError(err)
	}
	changed, err := x.Repo.ChangedFiles(ctx, x.Integration, x.BaseSHA)
	if err != nil {
		return actionError(err)
	}
	tree, err := x.Repo.TreeHash(ctx, head)
	if err != nil {
		return actionError(err)
	}
	results := x.GateRunner.Run(ctx, x.Integration, append(append([]gates.Command(nil), x.Gates...), x.FinalGates...), changed, tree)
	if err := ctx.Err(); err != nil {
		return actionError(err)
	}
	data, _ := json.MarshalIndent(results, "", "  ")
	_ = x.Run.WriteFile("artifacts/final_gates.json", data)
	passed, summaries := x.judge(results)
	detail := "the merged integration branch passes every gate"
	if !passed {
		var failing []string
		for _, g := range summaries {
			if !g.Passed && !g.Skipped {
				failing = append(failing, g.Name)
			}
		}
		detail = "failing on the integration branch: " + strings.Join(failing, ", ")
	}
	return loop.Event{Type: loop.EvFinalVerified, Passed: passed, Gates: summaries, Head: head, Detail: detail}
}

// --- delegations ---------------------------------------------------------

func (x *Executor) delegate(ctx context.Context, s loop.State, a loop.Action) loop.Event {
	fail := func(reason, detail string, u loop.Usage) loop.Event {
		return loop.Event{Type: loop.EvDelegationFail, Reason: reason, Detail: x.Redactor.String(detail), Usage: u}
	}
	root, readOnly := x.Integration, true
	if a.TaskID != "" {
		root = s.Tasks[a.TaskID].Worktree
		readOnly = a.Role != loop.RoleExecutor
	}
	if a.Role == loop.RoleExecutor {
		// A re-issued executor starts from a clean worktree: whatever an
		// interrupted attempt left behind is discarded.
		if err := x.Repo.ResetHard(ctx, root, s.Tasks[a.TaskID].Base); err != nil {
			return fail(string(delegate.ReasonModelError), err.Error(), loop.Usage{})
		}
	}
	message, err := x.compose(ctx, s, a, root)
	if err != nil {
		return fail("invalid_delegation", err.Error(), loop.Usage{})
	}
	// What exactly the agent was told, for people and for audits.
	_ = x.Run.WriteFile("artifacts/"+artifactName(a.ID)+".delegation.md", []byte(x.Redactor.String(message)))
	schema, err := delegate.Schema(a.Role)
	if err != nil {
		return fail("invalid_delegation", err.Error(), loop.Usage{})
	}
	provider, modelName, _, err := x.Models.ForRole(a.Role)
	if err != nil {
		return fail(string(delegate.ReasonModelError), err.Error(), loop.Usage{})
	}
	opts := x.Tools
	opts.Root, opts.ReadOnly = root, readOnly
	toolset, err := tools.New(opts)
	if err != nil {
		return fail("invalid_delegation", err.Error(), loop.Usage{})
	}
	if slices.Contains(x.MCPRoles, a.Role) {
		toolset = append(toolset, x.MCPTools...)
	}
	agent := x.Agents.ForRole(a.Role)
	var task = taskOf(s, a.TaskID)
	spec := agentrt.Spec{
		Role:         a.Role,
		Model:        modelName,
		System:       agents.System(agent, x.Instructions, x.contributions(s, a)),
		Delegation:   message,
		Tools:        toolset,
		ResultSchema: schema,
		Validate: func(out json.RawMessage) error {
			_, err := delegate.Validate(a.Role, out, task)
			return err
		},
		MaxTurns:        x.MaxTurns,
		MaxOutputTokens: x.MaxOutputTokens,
		ContextWindow:   x.ContextWindow,
	}
	var used loop.Usage
	var mu sync.Mutex
	hooks := agentrt.Hooks{
		BeforeCall: x.Budget.Reserve,
		AfterCall: func(u model.Usage) {
			cost := x.Models.Cost(modelName, u)
			x.Budget.Spend(u.Total(), cost)
			mu.Lock()
			used = used.Add(loop.Usage{Tokens: u.Total(), CostUSD: cost, Calls: 1})
			tokens := used.Tokens
			mu.Unlock()
			x.activity(Activity{ActionID: a.ID, TaskID: a.TaskID, Role: a.Role, Tokens: tokens})
		},
		OnTool: func(name string, _ json.RawMessage) {
			x.activity(Activity{ActionID: a.ID, TaskID: a.TaskID, Role: a.Role, Tool: name})
		},
	}
	var transcript bytes.Buffer
	tw := x.Redactor.Writer(&transcript)
	var res *agentrt.Result
	if x.Backend != nil {
		res, err = x.Backend.Run(ctx, root, spec, hooks, tw)
	} else {
		res, err = agentrt.Run(ctx, provider, spec, hooks, tw)
	}
	_ = tw.Flush()
	_ = x.Run.WriteFile("transcripts/"+artifactName(a.ID)+".jsonl", transcript.Bytes())
	mu.Lock()
	spent := used
	mu.Unlock()
	if err != nil {
		var f *agentrt.Failure
		if errors.As(err, &f) {
			if ctx.Err() != nil {
				return fail(loop.ReasonCancelled, f.Detail, spent)
			}
			return fail(f.Reason, f.Detail, spent)
		}
		return fail("invalid_delegation", err.Error(), spent)
	}
	_ = x.Run.WriteFile("artifacts/"+artifactName(a.ID)+".json", res.Output)
	if a.Role == loop.RoleDesignSpec {
		var spec delegate.SpecialistOutput
		if json.Unmarshal(res.Output, &spec) == nil {
			_ = x.Run.WriteFile(fmt.Sprintf("artifacts/design-spec-v%d.md", a.Iteration), []byte(spec.Document))
		}
	}
	return loop.Event{Type: loop.EvDelegationDone, Output: res.Output, Usage: spent}
}

func (x *Executor) activity(a Activity) {
	if x.Activity != nil {
		x.Activity(a)
	}
}

// contributions gathers what the run's capabilities contribute to one
// delegation, and turns each blocking attested gate at verify:post into an
// instruction to the verifier, whose verdict is the attestation (a model's
// pass never outvotes a failed command gate: those ran before it).
func (x *Executor) contributions(s loop.State, a loop.Action) []agents.Contribution {
	if len(x.Capabilities) == 0 {
		return nil
	}
	phase := string(s.Phase)
	if a.Role == loop.RoleDesignSpec {
		phase = string(loop.PhasePlan)
	}
	var out []agents.Contribution
	for _, f := range capability.ForDelegation(x.Capabilities, a.Role, phase, capability.Conditions{Depth: a.Depth, Schedule: x.Schedule, Config: x.CapabilityConfig}) {
		out = append(out, agents.Contribution{Capability: f.Capability, Into: f.Into, Text: f.Text})
	}
	if a.Role == loop.RoleVerifier {
		for _, g := range capability.Gates(x.Capabilities, "verify:post") {
			if g.Kind == "attested" && g.Mode == "blocking" {
				out = append(out, agents.Contribution{Capability: g.Capability, Into: loop.RoleVerifier, Text: fmt.Sprintf(
					"Blocking attested gate %s: %s\nIf it does not hold, your verdict is FAIL and failures name %s; if it holds, add the evidence to the summary of your last criterion.", g.ID, g.Text, g.ID)})
			}
		}
	}
	return out
}

// taskPoints are the per-task extension points; their blocking command
// gates run with the task's quality gates, so a failure fails the attempt.
var taskPoints = []string{"execute:task:pre", "execute:task:post", "verify:pre", "verify:post"}

// CapabilityGates turns the active capabilities' blocking command gates at
// the per-task points into gate commands that hold every task. Gates at
// run-level points are not among them: the loop fires those points itself
// (GatePoints), so final is always empty.
func CapabilityGates(active []capability.Capability, exts []string) (task, final []gates.Command) {
	for _, point := range taskPoints {
		for _, g := range capability.Gates(active, point) {
			if g.Kind == "command" && g.Mode == "blocking" && g.Command != "" {
				task = append(task, gates.Command{Name: g.Capability + "/" + g.ID, Command: g.Command, Extensions: exts})
			}
		}
	}
	return task, nil
}

// GatePoints are the run-level extension points at which the active
// capabilities declare gates: the loop fires each of them (ActPoint).
func GatePoints(active []capability.Capability) []string {
	var out []string
	for _, point := range capability.PointNames() {
		if slices.Contains(taskPoints, point) {
			continue
		}
		if len(capability.Gates(active, point)) > 0 {
			out = append(out, point)
		}
	}
	return out
}

// firePoint runs the gates the active capabilities declare at a run-level
// extension point on the integration branch. A blocking command gate that
// fails fails the point; advisory ones are reported. An attested gate needs
// an agent to attest it, and no agent works at a run-level point: it is
// reported as not evaluated, never as passed.
func (x *Executor) firePoint(ctx context.Context, a loop.Action) loop.Event {
	var cmds []gates.Command
	blocking := map[string]bool{}
	var notes []string
	for _, g := range capability.Gates(x.Capabilities, a.Point) {
		name := g.Capability + "/" + g.ID
		switch {
		case g.Kind == "command" && g.Command != "":
			cmds = append(cmds, gates.Command{Name: name, Command: g.Command})
			blocking[name] = g.Mode == "blocking"
		default:
			notes = append(notes, name+" (attested) not evaluated: no agent attests at "+a.Point)
		}
	}
	head, err := x.Repo.BranchSHA(ctx, loop.IntegrationBranch(x.RunID))
	if err != nil {
		return actionError(err)
	}
	tree, err := x.Repo.TreeHash(ctx, head)
	if err != nil {
		return actionError(err)
	}
	results := x.GateRunner.Run(ctx, x.Integration, cmds, nil, tree)
	if err := ctx.Err(); err != nil {
		return actionError(err)
	}
	ev := loop.Event{Type: loop.EvPointFired, Passed: true}
	var failed []string
	for _, r := range results {
		ev.Gates = append(ev.Gates, loop.GateSummary{Name: r.Name, Command: r.Command, Passed: r.Passed, Skipped: r.Skipped, OutputTail: r.OutputTail})
		if !r.Passed && !r.Skipped {
			if blocking[r.Name] {
				ev.Passed = false
				failed = append(failed, r.Name+" failed")
			} else {
				notes = append(notes, r.Name+" failed (advisory)")
			}
		}
	}
	data, _ := json.MarshalIndent(results, "", "  ")
	_ = x.Run.WriteFile("artifacts/"+artifactName(a.ID)+".json", data)
	ev.Detail = strings.Join(append(failed, notes...), "; ")
	if ev.Detail == "" {
		ev.Detail = fmt.Sprintf("%d gate(s) passed", len(results))
	}
	return ev
}
