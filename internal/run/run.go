// Package run starts and resumes runs: it resolves the project, prepares the
// run directory and the integration branch, and drives the loop with the
// local engine until the run is done, failed or paused.
package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/sluice-run/sluice/internal/agents"
	"github.com/sluice-run/sluice/internal/backend"
	"github.com/sluice-run/sluice/internal/capability"
	"github.com/sluice-run/sluice/internal/config"
	"github.com/sluice-run/sluice/internal/engine"
	"github.com/sluice-run/sluice/internal/engine/local"
	"github.com/sluice-run/sluice/internal/gates"
	"github.com/sluice-run/sluice/internal/gitx"
	"github.com/sluice-run/sluice/internal/grid"
	"github.com/sluice-run/sluice/internal/instructions"
	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/mcp"
	"github.com/sluice-run/sluice/internal/redact"
	"github.com/sluice-run/sluice/internal/resolve"
	"github.com/sluice-run/sluice/internal/store"
	"github.com/sluice-run/sluice/internal/tools"
)

// Options configure a run. Zero values take the project's configuration.
type Options struct {
	Root     string
	Goal     string
	Jobs     int
	Schedule string
	Depth    string
	// Yes approves the plan without asking.
	Yes bool
	// Budget raises or sets the run's limits (zero fields: keep).
	Budget  loop.Budget
	Timeout time.Duration

	Getenv  func(string) string
	Environ []string
	Now     func() time.Time
	// NewRunID names a new run; it receives the start time.
	NewRunID func(time.Time) string

	// Models overrides model selection (the demo and tests use it).
	Models    local.Models
	ModelDesc string
	// SandboxExe is the sluice binary, re-executed to confine bash.
	SandboxExe string

	// Ask puts the plan approval to a person (nil: nobody can answer).
	Ask      func(ctx context.Context, question string) (approve, answered bool)
	Observe  func(e loop.Entry, s loop.State)
	Activity func(local.Activity)
	// Notice receives one-line notes for the user (model choice, warnings).
	Notice func(string)

	// Engine is EngineLocal (the default) or EngineTemporal, which runs
	// the loop as a workflow on the Temporal service Temporal names.
	Engine   string
	Temporal TemporalOptions
}

// Result is where a run ended up.
type Result struct {
	RunID  string
	RunDir string
	Branch string
	State  loop.State
	// Models says what drove the run.
	Models string
	// Report is the path of the run's HTML report, once written.
	Report string
}

// Meta is what a run needs to be resumed exactly: written once at start.
type Meta struct {
	RunID      string        `json:"run_id"`
	Goal       string        `json:"goal"`
	BaseSHA    string        `json:"base_sha"`
	BaseBranch string        `json:"base_branch"`
	StartedAt  time.Time     `json:"started_at"`
	Settings   loop.Settings `json:"settings"`
	// Remote says the run's branches and files travel through a git
	// remote between clones (--remote with the Temporal engine), so
	// workers need a clone rather than this repository's path.
	Remote bool `json:"remote,omitempty"`
}

const metaFile = "meta.json"

// DefaultRunID names a run by its start time, sortable and readable.
func DefaultRunID(t time.Time) string { return t.UTC().Format("20060102-150405") }

// Start begins a new run of goal on the repository at opts.Root.
func Start(ctx context.Context, opts Options) (*Result, error) {
	opts = withDefaults(opts)
	if strings.TrimSpace(opts.Goal) == "" {
		return nil, errors.New(`the goal is empty: say what to build, e.g. sluice run "Add a search endpoint with pagination"`)
	}
	p, err := prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer p.unlock()
	branch, head, err := p.repo.Head(ctx)
	if err != nil {
		return nil, err
	}
	now := opts.Now()
	meta := Meta{
		RunID:      opts.NewRunID(now),
		Goal:       opts.Goal,
		BaseSHA:    head,
		BaseBranch: branch,
		StartedAt:  now.UTC().Truncate(time.Second),
		Settings:   settingsFrom(p.cfg, opts),
		Remote:     opts.Engine == EngineTemporal && opts.Temporal.Remote != "",
	}
	active, notices := capability.Enabled(p.capabilities, p.cfg.Capabilities.Enabled, p.cfg.Backend.Kind)
	for _, n := range notices {
		opts.Notice(n)
	}
	meta.Settings.GatePoints = local.GatePoints(active)
	for _, c := range active {
		meta.Settings.Capabilities = append(meta.Settings.Capabilities, c.ID)
		if len(capability.Contributions([]capability.Capability{c}, "plan:post", loop.RoleDesignSpec)) > 0 {
			meta.Settings.DesignSpec = true
		}
	}
	if opts.Models == nil && opts.Engine != EngineTemporal {
		// Fail before anything is written: a run that cannot reach a model
		// leaves no run directory and no branch behind.
		if _, _, err := pickModels(ctx, p.cfg, opts.Getenv); err != nil {
			return nil, err
		}
	}
	st, err := store.Create(p.runsDir, meta.RunID)
	if err != nil {
		return nil, fmt.Errorf("a run named %s: %w", meta.RunID, err)
	}
	defer st.Close()
	data, _ := json.MarshalIndent(meta, "", "  ")
	if err := st.WriteFile(metaFile, data); err != nil {
		return nil, err
	}
	if err := p.repo.CreateBranch(ctx, loop.IntegrationBranch(meta.RunID), head); err != nil {
		return nil, err
	}
	return p.drive(ctx, opts, st, meta, loop.New(meta.RunID, meta.Settings), nil, 0)
}

// Resume continues a paused or interrupted run (runID "" = the latest).
func Resume(ctx context.Context, runID string, opts Options) (*Result, error) {
	opts = withDefaults(opts)
	p, err := prepare(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer p.unlock()
	if runID == "" {
		if runID, err = store.Latest(p.runsDir); err != nil {
			return nil, fmt.Errorf("find the latest run: %w", err)
		}
	}
	st, recs, warnings, err := store.Open(filepath.Join(p.runsDir, runID))
	if err != nil {
		return nil, err
	}
	defer st.Close()
	for _, w := range warnings {
		opts.Notice("warning: " + w.String())
	}
	var meta Meta
	data, err := os.ReadFile(filepath.Join(st.Dir(), metaFile))
	if err == nil {
		err = json.Unmarshal(data, &meta)
	}
	if err != nil {
		return nil, fmt.Errorf("read %s of run %s: %w", metaFile, runID, err)
	}
	entries, err := Entries(recs)
	if err != nil {
		return nil, err
	}
	s := loop.Fold(loop.New(meta.RunID, meta.Settings), entries)
	att, err := readAttachment(st)
	if err != nil {
		return nil, err
	}
	if att.Following && opts.Engine != EngineTemporal {
		return nil, followedError(st, att)
	}
	// A complete run is done with, unless the starter that followed its
	// workflow stopped before collecting what the workers made.
	if s.Phase == loop.PhaseComplete && !att.Following {
		return &Result{RunID: runID, RunDir: st.Dir(), Branch: loop.IntegrationBranch(runID), State: s}, nil
	}
	budget := s.Settings.Budget
	if opts.Budget.Tokens > 0 {
		budget.Tokens = opts.Budget.Tokens
	}
	if opts.Budget.USD > 0 {
		budget.USD = opts.Budget.USD
	}
	resumed := loop.Event{Type: loop.EvResumed, Budget: &budget, Approve: opts.Yes}
	return p.drive(ctx, opts, st, meta, s, &resumed, len(entries))
}

func withDefaults(o Options) Options {
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Environ == nil {
		o.Environ = os.Environ()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.NewRunID == nil {
		o.NewRunID = DefaultRunID
	}
	if o.Notice == nil {
		o.Notice = func(string) {}
	}
	return o
}

// prepared is the project a run works on.
type prepared struct {
	repo      *gitx.Repo
	root      string
	sluiceDir string
	runsDir   string
	cfg       *config.Config
	resolved  *resolve.Result
	// capabilities are all the capabilities the project can see.
	capabilities []capability.Capability
	// grid is the project's gate grid (sluice init), nil when it has none.
	grid   *grid.Grid
	unlock func() error
}

func prepare(ctx context.Context, opts Options) (*prepared, error) {
	p, err := load(ctx, opts)
	if err != nil {
		return nil, err
	}
	if p.unlock, err = store.LockRepo(p.sluiceDir); err != nil {
		return nil, fmt.Errorf("another sluice run is driving this repository: %w", err)
	}
	return p, nil
}

// load reads the project without taking the repository lock: prepare takes
// it for a process that drives a run, a worker executing another process's
// run does not.
func load(ctx context.Context, opts Options) (*prepared, error) {
	if opts.Root == "" {
		return nil, errors.New("no repository directory given")
	}
	repo, err := gitx.Open(ctx, opts.Root)
	if err != nil {
		return nil, err
	}
	root := repo.Root()
	cfg, _, err := config.Load(root, opts.Getenv)
	if err != nil {
		return nil, err
	}
	res, err := resolve.Resolve(ctx, root, resolve.Options{})
	if err != nil {
		return nil, fmt.Errorf("resolve the project at %s: %w", root, err)
	}
	caps, err := loadCapabilities(root, config.UserDir(opts.Getenv))
	if err != nil {
		return nil, err
	}
	sluiceDir := filepath.Join(root, ".sluice")
	g, err := grid.Load(sluiceDir)
	switch {
	case errors.Is(err, grid.ErrNoGrid):
		g = nil
	case err != nil:
		return nil, fmt.Errorf("the gate grid cannot be used, so no run starts: %w", err)
	}
	if err := excludeSluiceDirs(repo); err != nil {
		return nil, err
	}
	return &prepared{repo: repo, root: root, sluiceDir: sluiceDir, runsDir: filepath.Join(sluiceDir, "runs"), cfg: cfg, resolved: res, capabilities: caps, grid: g, unlock: func() error { return nil }}, nil
}

// loadCapabilities finds every capability the project can see and checks
// them and the project's agent manifests against the role-family
// partition, failing closed: a run does not start on an invalid extension.
func loadCapabilities(root, userDir string) ([]capability.Capability, error) {
	dirs := capability.PluginDirs(capability.PluginLocations(root, userDir, nil))
	all, errs := capability.Discover(root, dirs)
	decls, derrs := capability.AgentDeclarations(root, dirs)
	errs = append(errs, derrs...)
	if err := capability.CheckPartition(append(capability.Declarations(all), decls...)); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("capabilities and agent manifests are checked before a run starts; fix these (see `sluice capability check`): %w", errors.Join(errs...))
	}
	return all, nil
}

// activeCapabilities picks the frozen ids out of all, in their order.
func activeCapabilities(all []capability.Capability, ids []string) []capability.Capability {
	byID := map[string]capability.Capability{}
	for _, c := range all {
		byID[c.ID] = c
	}
	var out []capability.Capability
	for _, id := range ids {
		if c, ok := byID[id]; ok {
			out = append(out, c)
		}
	}
	return out
}

// excludeSluiceDirs keeps sluice's own files out of the user's `git status`
// without touching their working tree: .git/info/exclude is local metadata.
func excludeSluiceDirs(repo *gitx.Repo) error {
	path, err := repo.GitPath("info/exclude")
	if err != nil {
		return err
	}
	data, _ := os.ReadFile(path)
	want := []string{"/.sluice/runs/", "/.sluice/worktrees/", "/.sluice/cache/", "/.sluice/lock"}
	var add []string
	for _, w := range want {
		if !strings.Contains(string(data), w) {
			add = append(add, w)
		}
	}
	if len(add) == 0 {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("prepare %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open %s: %w", path, err)
	}
	defer f.Close()
	prefix := ""
	if len(data) > 0 && !strings.HasSuffix(string(data), "\n") {
		prefix = "\n"
	}
	if _, err := f.WriteString(prefix + "# sluice's run state\n" + strings.Join(add, "\n") + "\n"); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

func settingsFrom(cfg *config.Config, o Options) loop.Settings {
	passes := map[string]int{"simple": 1, "medium": 2, "complex": 3}[cfg.Run.Complexity]
	s := loop.Settings{
		Goal:                o.Goal,
		ResearchPasses:      passes,
		CriticMaxIterations: cfg.Run.CriticMaxIterations,
		TaskRetries:         cfg.Run.TaskRetries,
		OnCriticExhausted:   cfg.Run.OnCriticExhausted,
		Jobs:                firstPositive(o.Jobs, cfg.Run.Jobs, runtime.NumCPU()),
		Schedule:            firstString(o.Schedule, cfg.Run.Schedule, "dag"),
		Depth:               firstString(o.Depth, cfg.Run.Depth, "standard"),
		AutoApprove:         o.Yes,
		Budget:              loop.Budget{Tokens: cfg.Budgets.Tokens, USD: cfg.Budgets.USD},
	}
	if o.Budget.Tokens > 0 {
		s.Budget.Tokens = o.Budget.Tokens
	}
	if o.Budget.USD > 0 {
		s.Budget.USD = o.Budget.USD
	}
	return s
}

func firstPositive(v ...int) int {
	for _, x := range v {
		if x > 0 {
			return x
		}
	}
	return 1
}

func firstString(v ...string) string {
	for _, x := range v {
		if x != "" {
			return x
		}
	}
	return ""
}

// gridCommands are the command clauses of one arrow of the grid at depth,
// each command once (a clause that repeats another's command, like the full
// suite beside the test gate, adds nothing to run).
func gridCommands(g *grid.Grid, arrow, depth string, exts []string) []gates.Command {
	var out []gates.Command
	seen := map[string]bool{}
	for _, c := range g.Clauses(arrow, depth) {
		if c.Kind != "command" || c.Command == "" || seen[c.Command] {
			continue
		}
		seen[c.Command] = true
		cmd := gates.Command{Name: c.ID, Command: c.Command}
		if cmd.PerFile() {
			cmd.Extensions = exts
		}
		out = append(out, cmd)
	}
	return out
}

// gateCommands is what every task is held to: the resolved quality gates
// with config overrides, plus the project's own command clauses. A gate that
// names a skill or an agent (/plugin:skill, @plugin:agent) is a review, not a
// command, and is left to the agents.
func gateCommands(res *resolve.Result, cfg *config.Config) []gates.Command {
	var out []gates.Command
	for _, c := range gates.Commands(res) {
		if o, ok := cfg.Gates.Commands[c.Name]; ok && o != "" {
			c.Command = o
		}
		if strings.HasPrefix(c.Command, "/") || strings.HasPrefix(c.Command, "@") {
			continue
		}
		out = append(out, c)
	}
	var exts []string
	if len(out) > 0 {
		exts = out[0].Extensions
	}
	for _, c := range cfg.Gates.Extra {
		if c.Kind == "command" && c.Command != "" && (c.Arrow == "" || c.Arrow == "implementer->integrator") {
			out = append(out, gates.Command{Name: c.ID, Command: c.Command, Extensions: exts})
		}
	}
	return out
}

func (p *prepared) drive(ctx context.Context, opts Options, st *store.Run, meta Meta, s loop.State, resumed *loop.Event, journaled int) (*Result, error) {
	res := &Result{RunID: meta.RunID, RunDir: st.Dir(), Branch: loop.IntegrationBranch(meta.RunID), Models: opts.ModelDesc}
	if opts.Engine == EngineTemporal {
		return p.driveTemporal(ctx, opts, st, meta, s, resumed, journaled, res)
	}
	x, desc, err := p.newExecutor(ctx, opts, st, meta, s.Settings)
	if err != nil {
		return nil, err
	}
	defer x.Close()
	if desc != "" {
		res.Models = desc
	}
	x.Budget = local.NewBudget(s.Settings.Budget, s.Usage)
	j := &journal{run: st}
	eng := &engine.Engine{Exec: x, Journal: j, Now: opts.Now, Observe: opts.Observe}
	if resumed != nil {
		if s, err = eng.Emit(s, *resumed); err != nil {
			return nil, err
		}
		x.Budget = local.NewBudget(s.Settings.Budget, s.Usage)
	}
	runCtx := ctx
	if opts.Timeout > 0 {
		var cancel context.CancelFunc
		runCtx, cancel = context.WithTimeout(ctx, opts.Timeout)
		defer cancel()
	}
	s, err = eng.Run(runCtx, s)
	if err != nil && ctx.Err() == nil && errors.Is(runCtx.Err(), context.DeadlineExceeded) {
		s, err = eng.Emit(s, loop.Event{Type: loop.EvPaused, Reason: fmt.Sprintf("the run's time limit of %s ran out; resume with `sluice resume`", opts.Timeout)})
	}
	res.State = s
	if err != nil {
		return res, err
	}
	if s.Phase == loop.PhaseComplete {
		p.cleanup(ctx, meta.RunID)
	}
	return res, nil
}

// integration checks out the run branch in the run's integration worktree
// (kept when it is already there).
func (p *prepared) integration(ctx context.Context, meta Meta) (string, error) {
	dir := filepath.Join(p.sluiceDir, "worktrees", meta.RunID, "_integration")
	if err := p.repo.AddWorktree(ctx, dir, loop.IntegrationBranch(meta.RunID), meta.BaseSHA); err != nil {
		return "", err
	}
	return dir, nil
}

// newExecutor builds the executor of a run on this machine, without a
// budget account (the caller seeds it with what the run has spent). desc
// says which models drive it when they come from the configuration.
func (p *prepared) newExecutor(ctx context.Context, opts Options, st *store.Run, meta Meta, settings loop.Settings) (*local.Executor, string, error) {
	var desc string
	models := opts.Models
	if models == nil {
		router, d, err := pickModels(ctx, p.cfg, opts.Getenv)
		if err != nil {
			return nil, "", err
		}
		models, desc = router, d
	}
	integration, err := p.integration(ctx, meta)
	if err != nil {
		return nil, "", err
	}
	reg, warnings, err := agents.Load(p.root)
	if err != nil {
		return nil, "", err
	}
	for _, w := range warnings {
		opts.Notice("warning: " + w.String())
	}
	// The specialists the language manifest names (seed 000) fill their
	// roles, prompt only.
	for _, role := range []string{loop.RoleCodeReviewer, loop.RoleDesignSpec} {
		r, ok := p.resolved.Roles[role]
		if !ok || r.Kind != "agent" || r.Path == "" {
			continue
		}
		a, err := agents.LoadFile(r.Path)
		if err != nil {
			opts.Notice(fmt.Sprintf("warning: the %s specialist %s: %v; using the built-in agent", role, r.Ref, err))
			continue
		}
		if reg.UseSpecialist(role, a) {
			opts.Notice(fmt.Sprintf("%s: %s (from the language manifest)", role, r.Ref))
		}
	}
	userDir := config.UserDir(opts.Getenv)
	inst, err := instructions.Load(p.root, userDir, p.cfg.Instructions.TokenBudget)
	if err != nil {
		return nil, "", err
	}
	gateTimeout, _ := time.ParseDuration(p.cfg.Run.GateTimeout)
	cache, err := gates.NewCache(filepath.Join(p.sluiceDir, "cache", "gates"))
	if err != nil {
		return nil, "", err
	}
	tmp := filepath.Join(p.sluiceDir, "worktrees", meta.RunID, "_tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return nil, "", fmt.Errorf("create the run's temp dir: %w", err)
	}
	active := activeCapabilities(p.capabilities, settings.Capabilities)
	taskGates, finalGates := gateCommands(p.resolved, p.cfg), []gates.Command(nil)
	var exts []string
	if len(taskGates) > 0 {
		exts = taskGates[0].Extensions
	}
	if p.grid != nil {
		taskGates = gridCommands(p.grid, "implementer->integrator", settings.Depth, exts)
		finalGates = gridCommands(p.grid, "integrator->done", settings.Depth, exts)
	}
	capTask, capFinal := local.CapabilityGates(active, exts)
	redactor := redact.FromEnv(opts.Environ)
	x := &local.Executor{
		Capabilities:     active,
		CapabilityConfig: p.cfg.Capabilities.Config,
		Schedule:         settings.Schedule,
		FinalGates:       append(finalGates, capFinal...),
		RunID:            meta.RunID,
		Repo:             p.repo,
		Run:              st,
		BaseSHA:          meta.BaseSHA,
		WorktreesDir:     filepath.Join(p.sluiceDir, "worktrees", meta.RunID),
		Integration:      integration,
		Identity:         gitx.Identity{Name: "sluice", Email: "sluice@localhost", When: meta.StartedAt},
		Gates:            append(taskGates, capTask...),
		GateRunner:       &gates.Runner{Timeout: gateTimeout, Cache: cache, Env: opts.Environ},
		Models:           models,
		Agents:           reg,
		Instructions:     inst.Text(),
		Redactor:         redactor,
		Tools: tools.Options{
			BashTimeout: 5 * time.Minute,
			OutputCap:   32 << 10,
			Env:         opts.Environ,
			SandboxExe:  opts.SandboxExe,
			TempDir:     tmp,
			Writable:    goBuildCache(ctx),
			Redact:      redactor,
			Warn:        onceEach(opts.Notice),
		},
		MaxTurns:        p.cfg.Budgets.TurnsPerDelegation,
		ContextWindow:   p.cfg.Models.Tiers["standard"].ContextWindow,
		MaxOutputTokens: p.cfg.Models.Tiers["standard"].MaxTokens,
		Ask:             opts.Ask,
		Activity:        opts.Activity,
	}
	x.Backend = pickBackend(p.cfg.Backend, opts.Notice)
	if roles := p.cfg.MCP.Roles; len(roles) > 0 {
		servers := p.cfg.MCP.Servers
		set, err := mcp.Load(ctx, p.root, func(name string) bool { return len(servers) == 0 || slices.Contains(servers, name) })
		if err != nil {
			return nil, "", fmt.Errorf("start the MCP servers of .mcp.json: %w", err)
		}
		x.MCPTools, x.MCPRoles, x.Closer = set.Tools(), roles, set
	}
	return x, desc, nil
}

// cleanup removes a finished run's worktrees; its branch stays.
func (p *prepared) cleanup(ctx context.Context, runID string) {
	dir := filepath.Join(p.sluiceDir, "worktrees", runID)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() && e.Name() != "_tmp" {
			_ = p.repo.RemoveWorktree(ctx, filepath.Join(dir, e.Name()))
		}
	}
	_ = os.RemoveAll(dir)
}

// goBuildCache is the Go build cache, made writable to executors' bash so
// `go test` in a worktree does not rebuild the standard library each time.
func goBuildCache(ctx context.Context) []string {
	out, err := exec.CommandContext(ctx, "go", "env", "GOCACHE").Output()
	if err != nil {
		return nil
	}
	dir := strings.TrimSpace(string(out))
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		return nil
	}
	return []string{dir}
}

// onceEach passes each distinct message on once.
func onceEach(notice func(string)) func(string) {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(msg string) {
		mu.Lock()
		first := !seen[msg]
		seen[msg] = true
		mu.Unlock()
		if first {
			notice(msg)
		}
	}
}

// pickBackend returns the coding-agent CLI that runs delegations, or nil
// for sluice's own tool loop; a CLI that is not installed falls back to the
// api backend with a notice.
func pickBackend(b config.Backend, notice func(string)) backend.Runner {
	switch b.Kind {
	case "", backend.KindAPI:
		return nil
	case backend.KindClaudeCode, backend.KindCodex:
		if !backend.Detect(b.Kind, exec.LookPath) {
			notice(fmt.Sprintf("backend %s is not installed (its binary is not on PATH); running agents with the api backend instead", b.Kind))
			return nil
		}
		if b.Kind == backend.KindClaudeCode {
			return &backend.ClaudeCode{}
		}
		return &backend.Codex{}
	}
	notice(fmt.Sprintf("unknown backend %q (use api, claude-code or codex); running agents with the api backend", b.Kind))
	return nil
}
