package testparse

import (
	"bufio"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
)

var (
	// "     Running unittests src/lib.rs (target/debug/deps/tiny-b8411d1b6389d6df)"
	cargoRunning = regexp.MustCompile(`^Running (?:unittests )?(.+?) \((.+)\)$`)
	// "test result: FAILED. 1 passed; 2 failed; 1 ignored; ..."
	cargoResult = regexp.MustCompile(`^test result: \S+\. (\d+) passed; (\d+) failed;`)
	cargoHash   = regexp.MustCompile(`-[0-9a-f]{16}$`)
)

// CargoTest reads the plain output of `cargo test`, stdout and stderr on one
// stream (cargo's "Running" lines go to stderr, the test harness's to
// stdout). A test's identifier is "<binary> (<source>) <test path>", e.g.
// "tiny (src/lib.rs) tests::adds" or "it (tests/it.rs) adds", and for a
// doctest "<crate> (doctests) src/lib.rs - add (line 3)", so the same test
// name in two targets or workspace members stays distinct. Without the
// "Running" lines (stdout alone) the identifier is the bare test path.
//
// A test binary that cargo reports as failed without a "test result" line
// (it crashed or aborted mid-run) is identified by its binary and source
// alone, and a crate that did not compile by "<crate> (build)": both hide
// tests, so neither may vanish from the failing set. A harness summary that
// counts more failures than the names found is an error, never a smaller
// set.
func CargoTest(r io.Reader) (Report, error) {
	var (
		rep     Report
		failing = map[string]bool{}
		prefix  string
		target  string // the current binary's id, "" outside one
		named   map[string]bool
		results int
		summed  bool // the current binary printed its "test result"
		inList  bool // inside the indented name list after "failures:"
	)
	id := func(name string) string { return prefix + name }
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		raw := sc.Text()
		line := strings.TrimSpace(raw)
		if inList {
			if strings.HasPrefix(raw, "    ") && line != "" {
				named[id(line)] = true
				failing[id(line)] = true
				continue
			}
			inList = false
		}
		switch {
		case strings.HasPrefix(line, "Running "):
			m := cargoRunning.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			bin := m[2]
			if i := strings.LastIndexAny(bin, `/\`); i >= 0 {
				bin = bin[i+1:]
			}
			bin = cargoHash.ReplaceAllString(strings.TrimSuffix(bin, ".exe"), "")
			target = bin + " (" + m[1] + ")"
			prefix, named, summed = target+" ", map[string]bool{}, false
		case strings.HasPrefix(line, "Doc-tests "):
			target = strings.TrimPrefix(line, "Doc-tests ") + " (doctests)"
			prefix, named, summed = target+" ", map[string]bool{}, false
		case strings.HasPrefix(line, "test ") && strings.HasSuffix(line, " ... FAILED"):
			if named == nil {
				named = map[string]bool{}
			}
			name := id(strings.TrimSuffix(strings.TrimPrefix(line, "test "), " ... FAILED"))
			named[name] = true
			failing[name] = true
		case line == "failures:" && raw == line:
			if named == nil {
				named = map[string]bool{}
			}
			inList = true
		case strings.HasPrefix(line, "test result: "):
			m := cargoResult.FindStringSubmatch(line)
			if m == nil {
				continue
			}
			passed, _ := strconv.Atoi(m[1])
			failed, _ := strconv.Atoi(m[2])
			if failed > len(named) {
				return Report{}, fmt.Errorf("cargo test output: %s counts %d failed tests but names %d", strings.TrimSuffix(prefix, " "), failed, len(named))
			}
			rep.Passed += passed
			rep.Failed += failed
			results++
			// Without "Running" lines the next binary's names start afresh.
			summed, named = true, map[string]bool{}
		case strings.HasPrefix(line, "error: test failed, to rerun pass") || strings.HasPrefix(line, "error: doctest failed, to rerun pass"):
			if !summed && target != "" {
				failing[target] = true
				rep.Failed++
				results++
			}
		case strings.HasPrefix(line, "error: could not compile `"):
			crate, _, _ := strings.Cut(strings.TrimPrefix(line, "error: could not compile `"), "`")
			failing[crate+" (build)"] = true
			rep.Failed++
			results++
		}
	}
	if err := sc.Err(); err != nil {
		return Report{}, fmt.Errorf("read cargo test output: %w", err)
	}
	if results == 0 {
		return Report{}, fmt.Errorf("cargo test output: %w", ErrNoResults)
	}
	rep.Failing = sortedKeys(failing)
	return rep, nil
}
