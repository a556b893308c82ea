package report

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"html/template"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/sluice-run/sluice/internal/loop"
	"github.com/sluice-run/sluice/internal/run"
)

// FileName is the report's name inside the run directory.
const FileName = "report.html"

//go:embed report.html.tmpl
var pageSource string

// Options configure Write.
type Options struct {
	// Repo is the repository the run belongs to. When set, Write stores
	// each task's diff (its base to its last commit) as diffs/<task>.diff
	// in the run directory, and the report links it.
	Repo string
	// Output is where to write the report (default: report.html in the
	// run directory). Links in it stay relative to the run directory.
	Output string
}

func newTemplate() (*template.Template, error) {
	funcs := template.FuncMap{
		"add":   func(a, b int) int { return a + b },
		"usd":   func(v float64) string { return fmt.Sprintf("$%.4f", v) },
		"short": func(s string) string { return clip(s, 11) },
		"clip":  func(s string, n int) string { return clip(firstLine(s), n) },
		"tail":  tail,
		"stamp": func(t time.Time) string {
			if t.IsZero() {
				return "—"
			}
			return t.UTC().Format("2006-01-02 15:04:05 UTC")
		},
		"since": func(a, b time.Time) string {
			if a.IsZero() || b.IsZero() {
				return ""
			}
			return clock(b.Sub(a))
		},
		"secs": func(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) },
	}
	t, err := template.New("report").Funcs(funcs).Parse(pageSource)
	if err != nil {
		return nil, fmt.Errorf("parse the report template: %w", err)
	}
	return t, nil
}

type spendRow struct {
	Spend
	Bar int
}

type page struct {
	D           *Data
	Graph       *Graph
	Gantt       *Gantt
	GanttHeight int
	Legend      []struct{ Key, Colour string }
	Counts      string
	Budget      string
	Roles       []spendRow
	Models      []spendRow
	AnyGates    bool
}

// Render returns the report of a loaded run as one self-contained HTML page.
func Render(l *run.Loaded) ([]byte, error) {
	if l == nil {
		return nil, errors.New("render report: no run given")
	}
	d := Collect(l)
	status := map[string]loop.TaskStatus{}
	for _, t := range d.Tasks {
		status[t.ID] = t.Status
	}
	p := page{D: d, Graph: layoutGraph(d.Plan, status), Gantt: layoutGantt(d), Legend: roleColours,
		Counts: counts(d), Budget: budget(d.Settings.Budget), Roles: bars(d.ByRole), Models: bars(d.ByModel)}
	if p.Gantt != nil {
		p.GanttHeight = p.Gantt.Height
	}
	for _, t := range d.Tasks {
		if len(t.Gates) > 0 {
			p.AnyGates = true
		}
	}
	t, err := newTemplate()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, p); err != nil {
		return nil, fmt.Errorf("render the report of run %s: %w", d.RunID, err)
	}
	return buf.Bytes(), nil
}

// Write renders the report of the run in runDir and writes it (default:
// runDir/report.html), returning the path written.
func Write(ctx context.Context, runDir string, opts Options) (string, error) {
	l, err := run.LoadDir(runDir)
	if err != nil {
		return "", fmt.Errorf("write report: %w", err)
	}
	return WriteLoaded(ctx, l, opts)
}

// WriteLoaded is Write for a run already loaded.
func WriteLoaded(ctx context.Context, l *run.Loaded, opts Options) (string, error) {
	if opts.Repo != "" {
		if err := writeDiffs(ctx, opts.Repo, l); err != nil {
			return "", err
		}
	}
	data, err := Render(l)
	if err != nil {
		return "", err
	}
	out := opts.Output
	if out == "" {
		out = filepath.Join(l.Dir, FileName)
	}
	// Written beside its destination and renamed, so a browser never opens
	// half a report.
	tmp, err := os.CreateTemp(filepath.Dir(out), ".report-*.html")
	if err != nil {
		return "", fmt.Errorf("write report %s: %w", out, err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("write report %s: %w", out, err)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		os.Remove(tmp.Name())
		return "", fmt.Errorf("write report %s: %w", out, err)
	}
	return out, nil
}

// writeDiffs stores each task's change, from the base its last attempt
// started on to that attempt's commit, for the report to link.
func writeDiffs(ctx context.Context, repo string, l *run.Loaded) error {
	s := l.State
	for _, id := range s.Order {
		t := s.Tasks[id]
		if t.Base == "" || t.Head == "" {
			continue
		}
		cmd := exec.CommandContext(ctx, "git", "-C", repo, "diff", "--no-color", "--no-ext-diff", t.Base, t.Head, "--")
		cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			// A commit that is gone (a pruned branch) leaves the task
			// without a diff link rather than failing the report.
			continue
		}
		path := filepath.Join(l.Dir, filepath.FromSlash(diffPath(id)))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return fmt.Errorf("write diff of task %s: %w", id, err)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			return fmt.Errorf("write diff of task %s: %w", id, err)
		}
	}
	return nil
}

func counts(d *Data) string {
	if len(d.Tasks) == 0 {
		return "none yet"
	}
	n := map[loop.TaskStatus]int{}
	for _, t := range d.Tasks {
		n[t.Status]++
	}
	parts := []string{fmt.Sprintf("%d tasks", len(d.Tasks))}
	for _, st := range []loop.TaskStatus{loop.TaskMerged, loop.TaskRunning, loop.TaskPending, loop.TaskFailed, loop.TaskSkipped} {
		if n[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n[st], st))
		}
	}
	return strings.Join(parts, " · ")
}

func budget(b loop.Budget) string {
	var parts []string
	if b.Tokens > 0 {
		parts = append(parts, fmt.Sprintf("%d tokens", b.Tokens))
	}
	if b.USD > 0 {
		parts = append(parts, fmt.Sprintf("$%.2f", b.USD))
	}
	return strings.Join(parts, ", ")
}

func bars(rows []Spend) []spendRow {
	top := 0.0
	for _, r := range rows {
		top = max(top, r.CostUSD)
	}
	out := make([]spendRow, len(rows))
	for i, r := range rows {
		out[i] = spendRow{Spend: r}
		if top > 0 {
			out[i].Bar = int(120 * r.CostUSD / top)
		}
	}
	return out
}

// tail keeps the last n bytes of s, on a line boundary when one is near.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := s[len(s)-n:]
	if i := strings.IndexByte(cut, '\n'); i >= 0 && i < 200 {
		cut = cut[i+1:]
	}
	return fmt.Sprintf("[%d earlier bytes left out]\n", len(s)-len(cut)) + cut
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
