// Package testparse reads the machine-readable output of test runners and
// names the tests that failed, so a failing test suite can be compared with
// its state at the run's base commit test by test rather than by exit
// status alone.
//
// Test identifiers are stable across runs of the same tree:
//   - go test -json: "import/path.TestName/subtest" (Go's own subtest
//     naming, spaces already rewritten to underscores); a package that failed
//     without a failing test (build failure, panic in init, TestMain exit) is
//     identified by its import path alone.
//   - JUnit XML: "classname::name", or "name" when classname is empty
//     (pytest collection errors).
//   - TAP: the names of enclosing subtests and the test joined with " > ".
//   - cargo test: "<binary> (<source>) <test path>"; see CargoTest.
package testparse

import (
	"bufio"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
)

// ErrNoResults means the input held no test results in the expected format.
var ErrNoResults = errors.New("no test results found")

// Report is what a test run said about its tests.
type Report struct {
	// Failing holds the identifiers of failing tests, sorted, no repeats.
	Failing []string
	// Passed and Failed count test results (skips count as neither).
	Passed int
	Failed int
	// Output is the human-readable text carried inside a structured stream
	// (go test -json's output events); empty for the other formats.
	Output string
}

// GoTestJSON reads a `go test -json` stream (test2json events, one JSON
// object per line). Lines that are not JSON events, such as a go command's
// own messages on a shared stream, are kept in Output but otherwise ignored.
func GoTestJSON(r io.Reader) (Report, error) {
	type event struct {
		Action      string
		Package     string
		ImportPath  string
		Test        string
		Output      string
		FailedBuild string
	}
	var (
		rep        Report
		out        strings.Builder
		events     int
		failing    = map[string]bool{}
		failedPkgs []string
		testFailed = map[string]bool{} // package → one of its tests failed
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		line := sc.Bytes()
		var ev event
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil || ev.Action == "" {
			out.Write(line)
			out.WriteByte('\n')
			continue
		}
		events++
		switch ev.Action {
		case "output", "build-output":
			out.WriteString(ev.Output)
		case "pass":
			if ev.Test != "" {
				rep.Passed++
			}
		case "fail":
			if ev.Test != "" {
				rep.Failed++
				failing[ev.Package+"."+ev.Test] = true
				testFailed[ev.Package] = true
			} else if ev.Package != "" {
				failedPkgs = append(failedPkgs, ev.Package)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Report{}, fmt.Errorf("read go test -json output: %w", err)
	}
	if events == 0 {
		return Report{}, fmt.Errorf("go test -json output: %w", ErrNoResults)
	}
	for _, pkg := range failedPkgs {
		if !testFailed[pkg] {
			failing[pkg] = true
			rep.Failed++
		}
	}
	rep.Failing = sortedKeys(failing)
	rep.Output = out.String()
	return rep, nil
}

// JUnitXML reads a JUnit XML report as written by pytest --junitxml, jest's
// and vitest's junit reporters, and cargo nextest: a <testsuites> or
// <testsuite> root, suites nested to any depth, <testcase> elements whose
// <failure> or <error> child marks them failed and <skipped> child skipped.
func JUnitXML(r io.Reader) (Report, error) {
	type testcase struct {
		Classname string     `xml:"classname,attr"`
		Name      string     `xml:"name,attr"`
		Failure   []struct{} `xml:"failure"`
		Error     []struct{} `xml:"error"`
		Skipped   []struct{} `xml:"skipped"`
	}
	type suite struct {
		XMLName   xml.Name
		Testcases []testcase `xml:"testcase"`
		Suites    []suite    `xml:"testsuite"`
	}
	var root suite
	if err := xml.NewDecoder(r).Decode(&root); err != nil {
		return Report{}, fmt.Errorf("read JUnit XML: %w", err)
	}
	if root.XMLName.Local != "testsuites" && root.XMLName.Local != "testsuite" {
		return Report{}, fmt.Errorf("read JUnit XML: root element is <%s>, want <testsuites> or <testsuite>: %w", root.XMLName.Local, ErrNoResults)
	}
	var rep Report
	failing := map[string]bool{}
	var walk func(s suite)
	walk = func(s suite) {
		for _, tc := range s.Testcases {
			id := tc.Name
			if tc.Classname != "" {
				id = tc.Classname + "::" + tc.Name
			}
			switch {
			case len(tc.Failure) > 0 || len(tc.Error) > 0:
				rep.Failed++
				failing[id] = true
			case len(tc.Skipped) > 0:
			default:
				rep.Passed++
			}
		}
		for _, child := range s.Suites {
			walk(child)
		}
	}
	walk(root)
	rep.Failing = sortedKeys(failing)
	return rep, nil
}

// TAP reads Test Anything Protocol output (version 13/14, as node --test
// writes it): "ok"/"not ok" lines, subtests indented four spaces under a
// "# Subtest: name" comment, "# SKIP" and "# TODO" directives (a failing
// TODO test is not a failure), and "Bail out!".
func TAP(r io.Reader) (Report, error) {
	var (
		rep     Report
		failing = map[string]bool{}
		path    []string // enclosing subtest names by depth
		results int
	)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		raw := sc.Text()
		trimmed := strings.TrimLeft(raw, " ")
		depth := (len(raw) - len(trimmed)) / 4
		switch {
		case strings.HasPrefix(trimmed, "# Subtest: "):
			if depth > len(path) {
				depth = len(path)
			}
			path = append(path[:depth], unescapeTAP(strings.TrimPrefix(trimmed, "# Subtest: ")))
		case strings.HasPrefix(trimmed, "Bail out!"):
			results++
			rep.Failed++
			failing[strings.TrimSpace(trimmed)] = true
		case strings.HasPrefix(trimmed, "ok") || strings.HasPrefix(trimmed, "not ok"):
			ok, name, directive, valid := parseTAPResult(trimmed)
			if !valid {
				continue
			}
			results++
			if depth > len(path) {
				depth = len(path)
			}
			id := strings.Join(append(append([]string{}, path[:depth]...), name), " > ")
			switch {
			case strings.HasPrefix(directive, "SKIP"):
			case ok:
				rep.Passed++
			case strings.HasPrefix(directive, "TODO"):
			default:
				rep.Failed++
				failing[id] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		return Report{}, fmt.Errorf("read TAP output: %w", err)
	}
	if results == 0 {
		return Report{}, fmt.Errorf("TAP output: %w", ErrNoResults)
	}
	rep.Failing = sortedKeys(failing)
	return rep, nil
}

// parseTAPResult splits "not ok 2 - name # SKIP reason" into its parts. The
// directive is upper-cased; an escaped "\#" belongs to the name.
func parseTAPResult(line string) (ok bool, name, directive string, valid bool) {
	rest, isNot := strings.CutPrefix(line, "not ok")
	if !isNot {
		rest, _ = strings.CutPrefix(line, "ok")
		ok = true
	}
	if rest != "" && rest[0] != ' ' {
		return false, "", "", false // "okay", "oklahoma": not a result line
	}
	rest = strings.TrimLeft(rest, " ")
	i := 0
	for i < len(rest) && rest[i] >= '0' && rest[i] <= '9' {
		i++
	}
	rest = strings.TrimLeft(rest[i:], " ")
	rest = strings.TrimPrefix(rest, "- ")
	// Find the first "#" not escaped by a backslash.
	for j := 0; j < len(rest); j++ {
		if rest[j] == '\\' {
			j++
			continue
		}
		if rest[j] == '#' {
			directive = strings.ToUpper(strings.TrimSpace(rest[j+1:]))
			rest = rest[:j]
			break
		}
	}
	return ok, unescapeTAP(strings.TrimSpace(rest)), directive, true
}

func unescapeTAP(s string) string {
	return strings.NewReplacer(`\#`, "#", `\\`, `\`).Replace(s)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
