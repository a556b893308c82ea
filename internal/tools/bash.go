package tools

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/sluice-run/sluice/internal/redact"
	"github.com/sluice-run/sluice/internal/sandbox"
)

// waitDelay bounds how long bash waits for the output pipes to close after
// the shell has exited or been killed: a background child that keeps them
// open must not hang the tool.
const waitDelay = 2 * time.Second

// errBashTimeout tells a command's own timeout from the end of the whole
// delegation, which cancels the command too.
var errBashTimeout = errors.New("bash command timed out")

type bash struct {
	wt         *worktree
	timeout    time.Duration
	outputCap  int
	env        []string
	sandboxExe string   // "" runs sh directly
	writable   []string // Landlock's writable directories
}

type bashInput struct {
	Command        string `json:"command"`
	TimeoutSeconds int    `json:"timeout_seconds"`
}

func (b *bash) tool(readOnly bool) Tool {
	desc := fmt.Sprintf("Run a shell command with sh -c in the worktree root. Output (stdout and stderr together) is capped at %d bytes; the middle of longer output is cut. The command is killed with all its children after %s (or timeout_seconds, if shorter). The exit status is reported. API keys and tokens are not in the environment.", b.outputCap, b.timeout)
	if readOnly {
		desc += " This role may not change the worktree: writes are allowed only in $TMPDIR."
	}
	schema := fmt.Sprintf(`{"type":"object","properties":{
  "command":{"type":"string","description":"The shell command"},
  "timeout_seconds":{"type":"integer","minimum":1,"maximum":%d,"description":"Kill the command after this many seconds"}},
 "required":["command"],"additionalProperties":false}`, max(int(b.timeout/time.Second), 1))
	// bash is never read-only for scheduling: even a sandboxed command may
	// write the temp dir, and commands have effects beyond files.
	return newTool("bash", desc, schema, false, b.run)
}

func (b *bash) run(ctx context.Context, in bashInput) (string, error) {
	if strings.TrimSpace(in.Command) == "" {
		return "", errors.New("command is empty")
	}
	timeout := b.timeout
	if in.TimeoutSeconds > 0 {
		timeout = min(timeout, time.Duration(in.TimeoutSeconds)*time.Second)
	}
	ctx, cancel := context.WithTimeoutCause(ctx, timeout, errBashTimeout)
	defer cancel()

	argv := []string{"sh", "-c", in.Command}
	if b.sandboxExe != "" {
		argv = sandbox.Args(b.sandboxExe, b.writable, argv...)
	}
	path := argv[0]
	if !filepath.IsAbs(path) {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("bash: %w", err)
		}
		path = p
	}
	cmd := exec.CommandContext(ctx, path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Dir = b.wt.realDir
	cmd.Env = b.env
	out := newCapBuffer(b.outputCap)
	cmd.Stdout, cmd.Stderr = out, out
	// The shell leads a process group of its own, so a timeout kills
	// everything it started, not just the shell.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return killGroup(cmd.Process.Pid) }
	cmd.WaitDelay = waitDelay

	start := time.Now()
	err := cmd.Start()
	if err != nil {
		return "", fmt.Errorf("bash: starting the shell: %w", err)
	}
	err = cmd.Wait()
	// Children left running in the background (or holding the output pipe)
	// die with the command; an agent's tool call does not leave daemons.
	_ = killGroup(cmd.Process.Pid)
	elapsed := time.Since(start).Round(time.Millisecond)

	text := out.String()
	if ctx.Err() != nil {
		if errors.Is(context.Cause(ctx), errBashTimeout) {
			return "", fmt.Errorf("command timed out after %s and was killed with all its child processes; output so far:\n%s", timeout, text)
		}
		return "", fmt.Errorf("command cancelled after %s: %w", elapsed, ctx.Err())
	}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return text + "[exit status 0]", nil
	case errors.As(err, &exitErr):
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return text + fmt.Sprintf("[killed by signal %v]", ws.Signal()), nil
		}
		return text + fmt.Sprintf("[exit status %d]", exitErr.ExitCode()), nil
	case errors.Is(err, exec.ErrWaitDelay):
		return text + "[exit status 0; background processes that kept the output open were killed]", nil
	default:
		return "", fmt.Errorf("bash: %w", err)
	}
}

func killGroup(pid int) error {
	err := syscall.Kill(-pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// capBuffer keeps the first and last halves of a command's output and counts
// what falls between. Memory stays bounded however much a command prints.
type capBuffer struct {
	head, tail []byte
	headCap    int
	tailCap    int
	total      int64
}

func newCapBuffer(limit int) *capBuffer {
	h := limit / 2
	return &capBuffer{headCap: h, tailCap: limit - h}
}

func (c *capBuffer) Write(p []byte) (int, error) {
	n := len(p)
	c.total += int64(n)
	if room := c.headCap - len(c.head); room > 0 {
		k := min(room, len(p))
		c.head = append(c.head, p[:k]...)
		p = p[k:]
	}
	if len(p) == 0 {
		return n, nil
	}
	if len(p) >= c.tailCap {
		c.tail = append(c.tail[:0], p[len(p)-c.tailCap:]...)
		return n, nil
	}
	if over := len(c.tail) + len(p) - c.tailCap; over > 0 {
		c.tail = append(c.tail[:0], c.tail[over:]...)
	}
	c.tail = append(c.tail, p...)
	return n, nil
}

// String is the kept output with a note of how much was cut, ending in a
// newline when not empty.
func (c *capBuffer) String() string {
	kept := int64(len(c.head) + len(c.tail))
	var b strings.Builder
	b.Write(c.head)
	if cut := c.total - kept; cut > 0 {
		fmt.Fprintf(&b, "\n[... %d bytes of output cut (%d bytes in all); showing the first %d and the last %d bytes ...]\n", cut, c.total, len(c.head), len(c.tail))
	}
	b.Write(c.tail)
	if b.Len() > 0 && !strings.HasSuffix(b.String(), "\n") {
		b.WriteByte('\n')
	}
	return b.String()
}

// envAllowed are the variables bash inherits from the parent environment:
// what shells, compilers and package managers need to find themselves and
// their caches. Anything else, and any credential even if listed, is
// dropped.
func envAllowed() []string {
	return []string{
		"PATH", "HOME", "USER", "LOGNAME", "SHELL", "LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE",
		"LC_MESSAGES", "TERM", "TZ", "TMPDIR", "XDG_CACHE_HOME", "XDG_CONFIG_HOME",
		"GOPATH", "GOCACHE", "GOMODCACHE", "GOFLAGS", "GOPROXY", "GOPRIVATE", "GONOSUMDB",
		"GONOPROXY", "GOSUMDB", "GOTOOLCHAIN", "GOROOT", "CGO_ENABLED", "CC", "CXX",
		"CARGO_HOME", "RUSTUP_HOME", "JAVA_HOME", "NODE_PATH", "NPM_CONFIG_CACHE",
		"PYTHONPATH", "VIRTUAL_ENV", "PIP_CACHE_DIR",
		"GIT_AUTHOR_NAME", "GIT_AUTHOR_EMAIL", "GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL",
		"GIT_CONFIG_NOSYSTEM", "SSL_CERT_FILE", "SSL_CERT_DIR",
	}
}

// FilterEnv returns the variables of environ that bash may see: those named
// in the allowlist, minus every credential (names ending in _API_KEY, _KEY
// or _TOKEN, or containing SECRET or PASSWORD), whatever the allowlist says.
func FilterEnv(environ []string) []string {
	allowed := envAllowed()
	var out []string
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || redact.IsSecretName(name) {
			continue
		}
		for _, a := range allowed {
			if name == a {
				out = append(out, kv)
				break
			}
		}
	}
	return out
}

// bashEnv is the environment of bash commands. TMPDIR is the delegation's
// temp dir. Under Landlock, a Go build cache that bash could not write is
// moved into the temp dir, so builds work (from a cold cache) instead of
// failing on a permission error.
func bashEnv(environ []string, tempDir string, sandboxed bool, writable []string) []string {
	env := FilterEnv(environ)
	set := func(name, value string) {
		for i, kv := range env {
			if strings.HasPrefix(kv, name+"=") {
				env[i] = name + "=" + value
				return
			}
		}
		env = append(env, name+"="+value)
	}
	get := func(name string) string {
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, name+"="); ok {
				return v
			}
		}
		return ""
	}
	if get("PATH") == "" {
		set("PATH", "/usr/local/bin:/usr/bin:/bin")
	}
	if tempDir != "" {
		set("TMPDIR", tempDir)
	}
	if sandboxed && tempDir != "" {
		cache := get("GOCACHE")
		if cache == "" {
			base := get("XDG_CACHE_HOME")
			if base == "" && get("HOME") != "" {
				base = filepath.Join(get("HOME"), ".cache")
			}
			if base != "" {
				cache = filepath.Join(base, "go-build")
			}
		}
		if cache == "" || !underAny(cache, writable) {
			set("GOCACHE", filepath.Join(tempDir, "go-build"))
		}
	}
	return env
}

func underAny(p string, dirs []string) bool {
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	for _, d := range dirs {
		if real, err := filepath.EvalSymlinks(d); err == nil {
			d = real
		}
		if _, ok := within(d, p); ok {
			return true
		}
	}
	return false
}
