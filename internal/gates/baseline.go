package gates

import (
	"fmt"
	"slices"
	"strings"
)

// Verdict is a task's gate result judged against the run's T0 baseline.
type Verdict struct {
	Name string `json:"name"`
	Pass bool   `json:"pass"`
	// Reason says why, in words a user and an executor can act on.
	Reason string `json:"reason"`
	// NewFailures names the tests (or, for a {files} command, the files)
	// that fail now and did not fail at T0.
	NewFailures []string `json:"new_failures,omitempty"`
	// PreExisting is true when the command fails now and the verdict
	// passes because it failed the same way at T0; the run's summary lists
	// every such command.
	PreExisting bool `json:"pre_existing,omitempty"`
}

// Judge compares a command's result on a task's tree (now) with its result
// at the run's base commit (t0): "no worse than before".
//
// Whole-tree commands (no {files}):
//   - passed at T0: must pass now; the tests failing now are named.
//   - failed at T0 and both outputs parsed: passes when the tests failing
//     now are a subset of those failing at T0; otherwise the new ones are
//     named and it blocks.
//   - failed at T0 with output that could not be parsed: "failing before
//     and after", not blocking (PreExisting). A result that could be parsed
//     at T0 but not now blocks: the failure changed in a way sluice cannot
//     compare.
//   - timed out now but not at T0: blocks.
//
// {files} commands run on the files the task changed; T0 for them is the
// same command on every tracked file of its extensions at the base commit
// (its FailingTests name the files failing then). Files the task did not
// change are never checked, so their pre-existing failures never block.
// A changed file that fails now blocks even if it failed at T0: for a
// check that only says pass or fail per file (gofmt -l, a linter's exit
// status) "worse" cannot be measured, so a task that piles more unformatted
// code into an unformatted file would look no worse; and the fix is
// mechanical (run the formatter on the file). The reason says which of the
// files were already failing at T0, so the executor knows to fix the whole
// file, not only its own lines.
//
// A zero t0 (the command has no baseline) is treated as passed at T0.
func Judge(t0, now Result) Verdict {
	v := Verdict{Name: now.Name}
	switch {
	case now.Skipped:
		v.Pass, v.Reason = true, "skipped: no changed file matches"
		return v
	case now.PerFile:
		return judgeFiles(v, t0, now)
	case now.Passed:
		v.Pass, v.Reason = true, "passed"
		return v
	}
	t0Failed := !t0.Passed && t0.Ran != ""
	switch {
	case now.TimedOut && !t0.TimedOut:
		v.Reason = fmt.Sprintf("timed out after %s; at the base commit it finished", now.Duration.Round(1e6))
	case !t0Failed:
		if now.Parsed {
			v.NewFailures = now.FailingTests
			v.Reason = "passed at the base commit, fails now: " + list(now.FailingTests)
		} else {
			v.Reason = fmt.Sprintf("passed at the base commit, fails now (exit status %d)", now.ExitCode)
		}
	case !t0.Parsed:
		v.Pass, v.PreExisting = true, true
		v.Reason = fmt.Sprintf("failing before and after (exit status %d at the base commit, %d now; output not parseable, compared by exit status)", t0.ExitCode, now.ExitCode)
	case !now.Parsed:
		v.Reason = fmt.Sprintf("failed at the base commit with %s; now fails with output that cannot be parsed (exit status %d)", list(t0.FailingTests), now.ExitCode)
	default:
		for _, f := range now.FailingTests {
			if !slices.Contains(t0.FailingTests, f) {
				v.NewFailures = append(v.NewFailures, f)
			}
		}
		if len(v.NewFailures) > 0 {
			v.Reason = "new failures: " + list(v.NewFailures)
		} else {
			v.Pass, v.PreExisting = true, true
			v.Reason = "failing before and after: every failing test already failed at the base commit (" + list(now.FailingTests) + ")"
		}
	}
	return v
}

func judgeFiles(v Verdict, t0, now Result) Verdict {
	if now.Passed {
		v.Pass, v.Reason = true, fmt.Sprintf("passed on %d file(s)", now.Files)
		return v
	}
	if now.TimedOut {
		v.Reason = fmt.Sprintf("timed out after %s on the changed files", now.Duration.Round(1e6))
		return v
	}
	if !now.Parsed {
		v.Reason = fmt.Sprintf("fails on the changed files (exit status %d)", now.ExitCode)
		return v
	}
	var old []string
	for _, f := range now.FailingTests {
		if t0.Parsed && slices.Contains(t0.FailingTests, f) {
			old = append(old, f)
		} else {
			v.NewFailures = append(v.NewFailures, f)
		}
	}
	var parts []string
	if len(v.NewFailures) > 0 {
		parts = append(parts, "fails on "+list(v.NewFailures))
	}
	if len(old) > 0 {
		parts = append(parts, "fails on "+list(old)+", which already failed at the base commit; a task that changes a file must leave it passing")
	}
	v.Reason = strings.Join(parts, "; ")
	return v
}

func list(names []string) string {
	if len(names) == 0 {
		return "(none named)"
	}
	return strings.Join(names, ", ")
}
