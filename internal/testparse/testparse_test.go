package testparse

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func open(t *testing.T, name string) *os.File {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestGoTestJSONRecorded(t *testing.T) {
	rep, err := GoTestJSON(open(t, "go_test.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		// A package that did not build has no test events: its path is the id.
		"example.com/fixture/broken",
		"example.com/fixture/calc.TestSub",
		"example.com/fixture/calc.TestTable",
		// t.Run("large numbers"): go test reports it with an underscore.
		"example.com/fixture/calc.TestTable/large_numbers",
		// The panicking test is named, and its package is not listed twice.
		"example.com/fixture/panicky.TestPanics",
	}
	if !slices.Equal(rep.Failing, want) {
		t.Errorf("Failing = %q\nwant     %q", rep.Failing, want)
	}
	// Passed: TestAdd, TestTable/small_numbers, TestFine.
	if rep.Passed != 3 || rep.Failed != 5 {
		t.Errorf("Passed, Failed = %d, %d; want 3, 5", rep.Passed, rep.Failed)
	}
	for _, s := range []string{"undefined: undefinedFunction", "panic: assignment to entry in nil map", "Sub(3, 1) = 1, want 2"} {
		if !strings.Contains(rep.Output, s) {
			t.Errorf("Output lacks %q", s)
		}
	}
}

func TestGoTestJSONEdgeCases(t *testing.T) {
	// A non-JSON line on the stream is tolerated and kept in the output.
	in := "go: downloading example.com/x v1.0.0\n" +
		`{"Action":"run","Package":"p","Test":"TestA"}` + "\n" +
		`{"Action":"pass","Package":"p","Test":"TestA"}` + "\n" +
		`{"Action":"pass","Package":"p"}` + "\n"
	rep, err := GoTestJSON(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Failing) != 0 || rep.Passed != 1 || !strings.Contains(rep.Output, "go: downloading") {
		t.Errorf("report = %+v", rep)
	}
	// A package that fails with no failing test (TestMain exit, timeout).
	in = `{"Action":"pass","Package":"p","Test":"TestA"}` + "\n" + `{"Action":"fail","Package":"p"}` + "\n"
	rep, err = GoTestJSON(strings.NewReader(in))
	if err != nil || !slices.Equal(rep.Failing, []string{"p"}) {
		t.Errorf("package-level failure: %q, %v", rep.Failing, err)
	}
	if _, err := GoTestJSON(strings.NewReader("FAIL\texample.com/x [build failed]\n")); !errors.Is(err, ErrNoResults) {
		t.Errorf("plain text output: err = %v, want ErrNoResults", err)
	}
}

func TestJUnitPytestRecorded(t *testing.T) {
	rep, err := JUnitXML(open(t, "pytest_junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"tests.test_broken", // collection error: empty classname
		"tests.test_calc.TestDivide::test_by_zero",
		"tests.test_calc::test_names[a name with spaces]",
		"tests.test_calc::test_sub",
	}
	if !slices.Equal(rep.Failing, want) {
		t.Errorf("Failing = %q\nwant     %q", rep.Failing, want)
	}
	if rep.Passed != 3 || rep.Failed != 4 {
		t.Errorf("Passed, Failed = %d, %d; want 3, 4", rep.Passed, rep.Failed)
	}
}

func TestJUnitVitestRecorded(t *testing.T) {
	rep, err := JUnitXML(open(t, "vitest_junit.xml"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`src/math.test.ts::math > handles a name with spaces and "quotes"`,
		"src/parse.test.ts::parse > nested > throws on bad input",
	}
	if !slices.Equal(rep.Failing, want) {
		t.Errorf("Failing = %q\nwant     %q", rep.Failing, want)
	}
	if rep.Passed != 3 || rep.Failed != 2 {
		t.Errorf("Passed, Failed = %d, %d; want 3, 2", rep.Passed, rep.Failed)
	}
}

func TestJUnitRejectsOtherXML(t *testing.T) {
	if _, err := JUnitXML(strings.NewReader(`<html><body/></html>`)); !errors.Is(err, ErrNoResults) {
		t.Errorf("non-JUnit XML: err = %v, want ErrNoResults", err)
	}
	if _, err := JUnitXML(strings.NewReader(`not xml`)); err == nil {
		t.Error("garbage parsed as JUnit XML")
	}
	// A bare <testsuite> root (older pytest) is accepted.
	rep, err := JUnitXML(strings.NewReader(`<testsuite><testcase classname="a" name="b"><failure/></testcase></testsuite>`))
	if err != nil || !slices.Equal(rep.Failing, []string{"a::b"}) {
		t.Errorf("bare testsuite: %q, %v", rep.Failing, err)
	}
}

func TestTAPNodeRecorded(t *testing.T) {
	rep, err := TAP(open(t, "node_test.tap"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"parser",
		"parser > rejects bad input",
		"subtracts with a # hash and spaces",
	}
	if !slices.Equal(rep.Failing, want) {
		t.Errorf("Failing = %q\nwant     %q", rep.Failing, want)
	}
	// Passed: adds two numbers, parses empty input; the skip counts as neither.
	if rep.Passed != 2 || rep.Failed != 3 {
		t.Errorf("Passed, Failed = %d, %d; want 2, 3", rep.Passed, rep.Failed)
	}
}

func TestTAPDirectives(t *testing.T) {
	in := "TAP version 14\n1..4\nok 1 - a\nnot ok 2 - b # TODO later\nnot ok 3 - c # skip flaky\nnot ok 4 d\nokay this is prose\nBail out! database down\n"
	rep, err := TAP(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rep.Failing, []string{"Bail out! database down", "d"}) || rep.Passed != 1 {
		t.Errorf("report = %+v", rep)
	}
	if _, err := TAP(strings.NewReader("hello\n")); !errors.Is(err, ErrNoResults) {
		t.Errorf("no results: err = %v", err)
	}
}

func TestCargoTestRecorded(t *testing.T) {
	rep, err := CargoTest(open(t, "cargo_test.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"it (tests/it.rs) adds_wrongly",
		// The doctest's name has spaces and parentheses.
		"tiny (doctests) src/lib.rs - add (line 3)",
		"tiny (src/lib.rs) tests::adds_wrongly",
		// An index out of bounds: a panic, not an assertion.
		"tiny (src/lib.rs) tests::panics",
	}
	if !slices.Equal(rep.Failing, want) {
		t.Errorf("Failing = %q\nwant     %q", rep.Failing, want)
	}
	// Passed: tests::adds, it's adds; the ignored test counts as neither.
	if rep.Passed != 2 || rep.Failed != 4 {
		t.Errorf("Passed, Failed = %d, %d; want 2, 4", rep.Passed, rep.Failed)
	}
}

func TestCargoTestEdgeCases(t *testing.T) {
	// stdout alone: no "Running" lines, bare test paths; a name only in the
	// "failures:" list (its "... FAILED" line garbled by --nocapture
	// output) still counts.
	in := "\nrunning 3 tests\ntest a::ok ... ok\ntest a::bad ... FAILED\ntest a::noisy ... printed textFAILED\n\n" +
		"failures:\n\n---- a::bad stdout ----\n    indented output, not a name\n\nfailures:\n    a::bad\n    a::noisy\n\n" +
		"test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n"
	rep, err := CargoTest(strings.NewReader(in))
	if err != nil || !slices.Equal(rep.Failing, []string{"a::bad", "a::noisy"}) || rep.Passed != 1 {
		t.Errorf("stdout only: %+v, %v", rep, err)
	}

	// A binary that aborts mid-run prints no "test result": the binary
	// itself is failing, so its hidden tests cannot drop out of the set.
	in = "     Running unittests src/lib.rs (target/debug/deps/tiny-0123456789abcdef)\n\nrunning 2 tests\n" +
		"error: test failed, to rerun pass `--lib`\n\nCaused by:\n  process didn't exit successfully: (signal: 6, SIGABRT)\n"
	rep, err = CargoTest(strings.NewReader(in))
	if err != nil || !slices.Equal(rep.Failing, []string{"tiny (src/lib.rs)"}) {
		t.Errorf("aborted binary: %q, %v", rep.Failing, err)
	}

	// A crate that does not compile.
	rep, err = CargoTest(strings.NewReader("error[E0425]: cannot find value `x`\nerror: could not compile `tiny` (lib test) due to 1 previous error\n"))
	if err != nil || !slices.Equal(rep.Failing, []string{"tiny (build)"}) {
		t.Errorf("build failure: %q, %v", rep.Failing, err)
	}

	// A summary counting more failures than it names is refused.
	in = "running 2 tests\ntest a ... FAILED\n\ntest result: FAILED. 0 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s\n"
	if _, err := CargoTest(strings.NewReader(in)); err == nil {
		t.Error("a summary with an unnamed failure parsed")
	}
	if _, err := CargoTest(strings.NewReader("warning: unused variable\n")); !errors.Is(err, ErrNoResults) {
		t.Errorf("no results: err = %v, want ErrNoResults", err)
	}
}
