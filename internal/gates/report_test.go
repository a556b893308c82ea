package gates

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// fakeRunner puts an executable shell script named name on a PATH the
// returned Runner's commands see.
func fakeRunner(t *testing.T, name, script string) *Runner {
	t.Helper()
	bin := t.TempDir()
	if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return &Runner{Timeout: time.Minute, Env: []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")}}
}

func recorded(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("..", "testparse", "testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// fakePytest copies a recorded pytest JUnit report to the --junitxml path
// it is given, notes that path in used-report and its runs in runs, and
// exits with $FAKE_EXIT (1 by default).
const fakePytest = `echo run >> runs
for a in "$@"; do
	case "$a" in --junitxml=*) out="${a#--junitxml=}" ;; esac
done
echo "$out" > used-report
[ -n "$FAKE_REPORT" ] && cp "$FAKE_REPORT" "$out"
echo "1 failed, 3 passed"
exit "${FAKE_EXIT:-1}"
`

func TestPytestJUnitReport(t *testing.T) {
	dir := t.TempDir()
	r := fakeRunner(t, "pytest", fakePytest)
	r.Env = append(r.Env, "FAKE_REPORT="+recorded(t, "pytest_junit.xml"))
	cache, err := NewCache(filepath.Join(t.TempDir(), "cache"))
	if err != nil {
		t.Fatal(err)
	}
	r.Cache = cache
	cmds := []Command{{Name: "test", Command: "pytest tests"}}
	res := r.Run(context.Background(), dir, cmds, nil, "tree-1")[0]
	if res.Passed || !res.Parsed {
		t.Fatalf("result = %+v, want a parsed failure", res)
	}
	want := []string{
		"tests.test_broken",
		"tests.test_calc.TestDivide::test_by_zero",
		"tests.test_calc::test_names[a name with spaces]",
		"tests.test_calc::test_sub",
	}
	if !slices.Equal(res.FailingTests, want) {
		t.Errorf("FailingTests = %q\nwant %q", res.FailingTests, want)
	}
	if res.Ran != `pytest --junitxml="$SLUICE_GATE_REPORT" tests` || !strings.Contains(res.OutputTail, "1 failed, 3 passed") {
		t.Errorf("Ran = %q, OutputTail = %q", res.Ran, res.OutputTail)
	}
	b, err := os.ReadFile(filepath.Join(dir, "used-report"))
	if err != nil {
		t.Fatal(err)
	}
	report := strings.TrimSpace(string(b))
	if !filepath.IsAbs(report) || strings.HasPrefix(report, dir) {
		t.Errorf("report path %q is not an absolute path outside the worktree %s", report, dir)
	}
	if _, err := os.Stat(filepath.Dir(report)); !os.IsNotExist(err) {
		t.Errorf("report directory %s left behind: %v", filepath.Dir(report), err)
	}

	// The line does not contain the temporary path, so an unchanged tree
	// is a cache hit.
	again := r.Run(context.Background(), dir, cmds, nil, "tree-1")[0]
	if runs, _ := os.ReadFile(filepath.Join(dir, "runs")); !again.Cached || strings.Count(string(runs), "run") != 1 {
		t.Errorf("second run: Cached = %v, runs = %q", again.Cached, runs)
	}
}

func TestPytestReportUnusable(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    []string
		detail string
	}{
		// Crashed before writing its report.
		{"missing", nil, "test report unusable"},
		{"garbage", []string{"FAKE_REPORT=" + recorded(t, "node_test.tap")}, "test report unusable"},
		// Interrupted (a collection error): the report does not cover the
		// suite.
		{"interrupted", []string{"FAKE_REPORT=" + recorded(t, "pytest_junit.xml"), "FAKE_EXIT=2"}, "1 failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := fakeRunner(t, "pytest", fakePytest)
			r.Env = append(r.Env, tc.env...)
			res := r.Run(context.Background(), t.TempDir(), []Command{{Name: "test", Command: "pytest -q"}}, nil, "")[0]
			if res.Ran != `pytest --junitxml="$SLUICE_GATE_REPORT" -q` {
				t.Errorf("Ran = %q", res.Ran)
			}
			if res.Passed || res.Parsed {
				t.Errorf("result = %+v, want an unparsed failure", res)
			}
			if !strings.Contains(res.OutputTail, tc.detail) {
				t.Errorf("OutputTail = %q, want it to mention %q", res.OutputTail, tc.detail)
			}
			if v := Judge(Result{Ran: "x", Passed: true}, res); v.Pass {
				t.Errorf("Judge passed an unparsed failure after a T0 pass: %+v", v)
			}
		})
	}
}

func TestVitestJUnitReport(t *testing.T) {
	r := fakeRunner(t, "vitest", `for a in "$@"; do
	case "$a" in --outputFile.junit=*) cp "$FAKE_REPORT" "${a#--outputFile.junit=}" ;; esac
done
exit 1
`)
	r.Env = append(r.Env, "FAKE_REPORT="+recorded(t, "vitest_junit.xml"))
	res := r.Run(context.Background(), t.TempDir(), []Command{{Name: "test", Command: "vitest run"}}, nil, "")[0]
	want := []string{
		`src/math.test.ts::math > handles a name with spaces and "quotes"`,
		"src/parse.test.ts::parse > nested > throws on bad input",
	}
	if res.Passed || !res.Parsed || !slices.Equal(res.FailingTests, want) {
		t.Errorf("result = %+v, want failing %q", res, want)
	}
}

func TestCargoTestParsed(t *testing.T) {
	if _, err := exec.LookPath("cargo"); err != nil {
		t.Skip("cargo not installed")
	}
	dir := t.TempDir()
	write(t, filepath.Join(dir, "Cargo.toml"), "[package]\nname = \"tiny\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n")
	write(t, filepath.Join(dir, "src", "lib.rs"), `pub fn add(a: i32, b: i32) -> i32 { a + b }

#[cfg(test)]
mod tests {
    #[test]
    fn adds() { assert_eq!(super::add(2, 2), 4); }
    #[test]
    fn adds_wrongly() { assert_eq!(super::add(2, 2), 5); }
}
`)
	// Its lib tests fail first: without --no-fail-fast cargo would never
	// run this binary.
	write(t, filepath.Join(dir, "tests", "it.rs"), "#[test]\nfn panics() { panic!(\"boom\"); }\n")
	r := &Runner{Timeout: 5 * time.Minute, Env: []string{"CARGO_TARGET_DIR=" + filepath.Join(dir, "target"), "RUST_BACKTRACE=0"}}
	res := r.Run(context.Background(), dir, []Command{{Name: "test", Command: "cargo test --offline --lib --tests"}}, nil, "")[0]
	if res.Passed || !res.Parsed || res.ExitCode != 101 {
		t.Fatalf("result = %+v, want a parsed failure", res)
	}
	want := []string{"it (tests/it.rs) panics", "tiny (src/lib.rs) tests::adds_wrongly"}
	if !slices.Equal(res.FailingTests, want) {
		t.Errorf("FailingTests = %q, want %q", res.FailingTests, want)
	}
	if !strings.Contains(res.OutputTail, "Running tests/it.rs") || !strings.Contains(res.OutputTail, "boom") {
		t.Errorf("OutputTail lacks cargo's merged output: %q", res.OutputTail)
	}
}
