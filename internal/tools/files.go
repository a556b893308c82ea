package tools

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
)

// Limits that keep tool output small enough to be useful to a model. The
// read window and the search cap follow SWE-agent's ablations (DESIGN §7):
// about 100 lines at a time, and about 50 search results with a summary.
const (
	DefaultReadLines = 100
	MaxReadLines     = 2000
	MaxLineBytes     = 2000 // longer lines are shown truncated
	MaxListEntries   = 500
	MaxGlobResults   = 200
	MaxGrepResults   = 50
	MaxGrepFileBytes = 10 << 20 // larger files are not searched
	sniffBytes       = 8000     // how much of a file decides "binary"
)

// isBinary reports whether data looks like a binary file: it has a NUL byte,
// as git and grep decide.
func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), sniffBytes)], 0) >= 0
}

type readFileInput struct {
	Path   string `json:"path"`
	Offset int    `json:"offset"`
	Limit  int    `json:"limit"`
}

func readFileTool(wt *worktree) Tool {
	return newTool("read_file",
		fmt.Sprintf("Read a text file from the worktree. Shows %d lines at a time with line numbers, and the file's total line count; use offset (1-based first line) and limit to see other parts.", DefaultReadLines),
		`{"type":"object","properties":{
  "path":{"type":"string","description":"File path relative to the worktree root"},
  "offset":{"type":"integer","minimum":1,"description":"First line to show (1-based); default 1"},
  "limit":{"type":"integer","minimum":1,"maximum":2000,"description":"How many lines to show; default 100"}},
 "required":["path"],"additionalProperties":false}`,
		true, func(ctx context.Context, in readFileInput) (string, error) {
			r, err := wt.resolve(in.Path)
			if err != nil {
				return "", err
			}
			return readWindow(r, in.Offset, in.Limit)
		})
}

func readWindow(r resolved, offset, limit int) (string, error) {
	if offset <= 0 {
		offset = 1
	}
	if limit <= 0 {
		limit = DefaultReadLines
	}
	limit = min(limit, MaxReadLines)
	f, err := os.Open(r.abs)
	if err != nil {
		return "", fileErr(r, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", fileErr(r, err)
	}
	if info.IsDir() {
		return "", fmt.Errorf("%s is a directory; use list to see its entries", displayPath(r))
	}
	br := bufio.NewReader(f)
	head, _ := br.Peek(sniffBytes)
	if isBinary(head) {
		return "", fmt.Errorf("%s is a binary file (%d bytes); read_file shows text only", r.rel, info.Size())
	}

	var out strings.Builder
	total := 0
	last := offset + limit - 1
	for {
		line, err := br.ReadString('\n')
		if line == "" && err != nil {
			if err != io.EOF {
				return "", fileErr(r, err)
			}
			break
		}
		total++
		if total >= offset && total <= last {
			line = strings.TrimSuffix(strings.TrimSuffix(line, "\n"), "\r")
			if len(line) > MaxLineBytes {
				line = line[:MaxLineBytes] + fmt.Sprintf(" ... [line truncated; %d bytes in all]", len(line))
			}
			fmt.Fprintf(&out, "%6d\t%s\n", total, line)
		}
	}
	if total == 0 {
		return fmt.Sprintf("%s is empty (0 lines).", r.rel), nil
	}
	if offset > total {
		return "", fmt.Errorf("offset %d is past the end of %s, which has %d lines", offset, r.rel, total)
	}
	shownTo := min(last, total)
	header := fmt.Sprintf("%s: lines %d-%d of %d\n", r.rel, offset, shownTo, total)
	if shownTo < total {
		fmt.Fprintf(&out, "(%d more lines; call read_file with offset %d to continue)\n", total-shownTo, shownTo+1)
	}
	return header + out.String(), nil
}

// fileErr turns a filesystem error into a message for the model, naming the
// path as the model knows it rather than the absolute path.
func fileErr(r resolved, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s does not exist", r.rel)
	case errors.Is(err, fs.ErrPermission):
		return fmt.Errorf("%s: permission denied", r.rel)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %s: %v", r.rel, pe.Op, pe.Err)
	}
	return fmt.Errorf("%s: %v", r.rel, err)
}

type writeFileInput struct {
	Path    string `json:"path"`
	Content string `json:"content"`
}

func writeFileTool(wt *worktree) Tool {
	return newTool("write_file",
		"Create a file in the worktree, or replace its whole content. Parent directories are created. A Go file that does not parse is rejected. Prefer edit_file to change part of an existing file.",
		`{"type":"object","properties":{
  "path":{"type":"string","description":"File path relative to the worktree root"},
  "content":{"type":"string","description":"The complete new content of the file"}},
 "required":["path","content"],"additionalProperties":false}`,
		false, func(ctx context.Context, in writeFileInput) (string, error) {
			r, err := wt.resolve(in.Path)
			if err != nil {
				return "", err
			}
			if err := checkSyntax(r, []byte(in.Content)); err != nil {
				return "", fmt.Errorf("write rejected, %s was not written: %w", r.rel, err)
			}
			mode := fs.FileMode(0o644)
			existed := false
			if info, err := os.Stat(r.abs); err == nil {
				if info.IsDir() {
					return "", fmt.Errorf("%s is a directory", displayPath(r))
				}
				mode, existed = info.Mode().Perm(), true
			}
			if err := os.MkdirAll(filepath.Dir(r.abs), 0o755); err != nil {
				return "", fileErr(r, err)
			}
			if err := os.WriteFile(r.abs, []byte(in.Content), mode); err != nil {
				return "", fileErr(r, err)
			}
			verb := "created"
			if existed {
				verb = "overwrote"
			}
			return fmt.Sprintf("%s %s (%d bytes, %d lines)", verb, r.rel, len(in.Content), countLines(in.Content)), nil
		})
}

func countLines(s string) int {
	if s == "" {
		return 0
	}
	n := strings.Count(s, "\n")
	if !strings.HasSuffix(s, "\n") {
		n++
	}
	return n
}

// checkSyntax rejects Go source that does not parse: an edit that breaks the
// syntax is caught at once, with the parser's message, instead of turns
// later (DESIGN §7). Files under testdata are left alone, as they may be
// deliberately broken.
func checkSyntax(r resolved, content []byte) error {
	if !strings.HasSuffix(r.rel, ".go") || slices.Contains(strings.Split(r.rel, "/"), "testdata") {
		return nil
	}
	fset := token.NewFileSet()
	_, err := parser.ParseFile(fset, r.rel, content, parser.SkipObjectResolution|parser.AllErrors)
	if err == nil {
		return nil
	}
	msg := err.Error()
	var list interface{ Len() int }
	if errors.As(err, &list) && list.Len() > 5 {
		msg = strings.Join(strings.SplitN(msg, "\n", 6)[:5], "\n")
	}
	return fmt.Errorf("the Go file would no longer parse:\n%s", msg)
}

type editFileInput struct {
	Path       string `json:"path"`
	OldString  string `json:"old_string"`
	NewString  string `json:"new_string"`
	ReplaceAll bool   `json:"replace_all"`
}

func editFileTool(wt *worktree) Tool {
	return newTool("edit_file",
		"Replace an exact piece of text in a file. old_string must match the file exactly (whitespace included) and exactly once, unless replace_all is set. An edit that leaves a Go file unparseable is rejected and the file is left unchanged.",
		`{"type":"object","properties":{
  "path":{"type":"string","description":"File path relative to the worktree root"},
  "old_string":{"type":"string","description":"The exact text to replace; include enough surrounding lines to make it unique"},
  "new_string":{"type":"string","description":"The replacement text"},
  "replace_all":{"type":"boolean","description":"Replace every occurrence instead of requiring exactly one"}},
 "required":["path","old_string","new_string"],"additionalProperties":false}`,
		false, func(ctx context.Context, in editFileInput) (string, error) {
			r, err := wt.resolve(in.Path)
			if err != nil {
				return "", err
			}
			if in.OldString == "" {
				return "", errors.New("old_string is empty; to create a file or replace all of it, use write_file")
			}
			if in.OldString == in.NewString {
				return "", errors.New("old_string and new_string are the same; nothing to change")
			}
			info, err := os.Stat(r.abs)
			if err != nil {
				return "", fileErr(r, err)
			}
			if info.IsDir() {
				return "", fmt.Errorf("%s is a directory", displayPath(r))
			}
			data, err := os.ReadFile(r.abs)
			if err != nil {
				return "", fileErr(r, err)
			}
			old := string(data)
			n := strings.Count(old, in.OldString)
			switch {
			case n == 0:
				return "", fmt.Errorf("old_string matches 0 times in %s; read the file again and copy the text exactly, whitespace and indentation included", r.rel)
			case n > 1 && !in.ReplaceAll:
				return "", fmt.Errorf("old_string matches %d times in %s (at lines %s); include more surrounding text so it matches exactly once, or set replace_all",
					n, r.rel, matchLines(old, in.OldString))
			}
			first := strings.Index(old, in.OldString)
			var updated string
			if in.ReplaceAll {
				updated = strings.ReplaceAll(old, in.OldString, in.NewString)
			} else {
				updated = old[:first] + in.NewString + old[first+len(in.OldString):]
			}
			if err := checkSyntax(r, []byte(updated)); err != nil {
				return "", fmt.Errorf("edit rejected, %s is unchanged: %w", r.rel, err)
			}
			if err := os.WriteFile(r.abs, []byte(updated), info.Mode().Perm()); err != nil {
				return "", fileErr(r, err)
			}
			startLine := strings.Count(old[:first], "\n") + 1
			return fmt.Sprintf("edited %s: replaced %d occurrence(s)\n%s", r.rel, n, snippet(updated, startLine, countLines(in.NewString))), nil
		})
}

// matchLines lists the line numbers where sub starts in s, at most ten.
func matchLines(s, sub string) string {
	var lines []string
	off := 0
	for len(lines) < 10 {
		i := strings.Index(s[off:], sub)
		if i < 0 {
			break
		}
		lines = append(lines, fmt.Sprint(strings.Count(s[:off+i], "\n")+1))
		off += i + max(len(sub), 1)
	}
	return strings.Join(lines, ", ")
}

// snippet shows the edited lines with a little context, so the model can
// check the result without reading the file again.
func snippet(s string, start, n int) string {
	const around, maxLines = 3, 30
	lines := strings.Split(s, "\n")
	from := max(start-around, 1)
	to := min(start+max(n, 1)-1+around, len(lines), from+maxLines-1)
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "%6d\t%s\n", i, lines[i-1])
	}
	return b.String()
}

type listInput struct {
	Path string `json:"path"`
}

func listTool(wt *worktree) Tool {
	return newTool("list",
		fmt.Sprintf("List a directory of the worktree: subdirectories end in /, files show their size. At most %d entries.", MaxListEntries),
		`{"type":"object","properties":{
  "path":{"type":"string","description":"Directory relative to the worktree root; default the root"}},
 "additionalProperties":false}`,
		true, func(ctx context.Context, in listInput) (string, error) {
			if in.Path == "" {
				in.Path = "."
			}
			r, err := wt.resolve(in.Path)
			if err != nil {
				return "", err
			}
			entries, err := os.ReadDir(r.abs)
			if err != nil {
				return "", fileErr(r, err)
			}
			var b strings.Builder
			shown := 0
			for _, e := range entries {
				if forbidden(e.Name()) {
					continue
				}
				if shown == MaxListEntries {
					fmt.Fprintf(&b, "... and %d more entries\n", len(entries)-shown)
					break
				}
				shown++
				switch {
				case e.IsDir():
					fmt.Fprintf(&b, "%s/\n", e.Name())
				case e.Type()&fs.ModeSymlink != 0:
					target, _ := os.Readlink(filepath.Join(r.abs, e.Name()))
					fmt.Fprintf(&b, "%s -> %s\n", e.Name(), target)
				default:
					size := int64(-1)
					if info, err := e.Info(); err == nil {
						size = info.Size()
					}
					fmt.Fprintf(&b, "%s (%d bytes)\n", e.Name(), size)
				}
			}
			if shown == 0 {
				return fmt.Sprintf("%s is empty", displayPath(r)), nil
			}
			return b.String(), nil
		})
}

type globInput struct {
	Pattern string `json:"pattern"`
	Path    string `json:"path"`
}

func globTool(wt *worktree) Tool {
	return newTool("glob",
		fmt.Sprintf("Find files whose path matches a glob pattern, relative to path (default the worktree root). * and ? match within one path element, ** matches any number of directories, e.g. \"**/*_test.go\". At most %d results.", MaxGlobResults),
		`{"type":"object","properties":{
  "pattern":{"type":"string","description":"Glob pattern, e.g. \"internal/**/*.go\""},
  "path":{"type":"string","description":"Directory to search from, relative to the worktree root; default the root"}},
 "required":["pattern"],"additionalProperties":false}`,
		true, func(ctx context.Context, in globInput) (string, error) {
			pat, err := compileGlob(in.Pattern)
			if err != nil {
				return "", err
			}
			if in.Path == "" {
				in.Path = "."
			}
			base, err := wt.resolve(in.Path)
			if err != nil {
				return "", err
			}
			var matches []string
			total := 0
			err = walkFiles(ctx, base.abs, func(p string, rel string) error {
				if pat.match(rel) {
					total++
					if len(matches) < MaxGlobResults {
						matches = append(matches, wt.relSlash(p))
					}
				}
				return nil
			})
			if err != nil {
				return "", fileErr(base, err)
			}
			if total == 0 {
				return fmt.Sprintf("no files match %q under %s", in.Pattern, displayPath(base)), nil
			}
			slices.Sort(matches)
			out := strings.Join(matches, "\n") + "\n"
			if total > len(matches) {
				out += fmt.Sprintf("... and %d more files (%d in all); narrow the pattern or the path\n", total-len(matches), total)
			}
			return out, nil
		})
}

// walkFiles calls fn for every regular file beneath dir, in lexical order,
// with its path and its slash-separated path relative to dir. It skips .git
// and .sluice and does not follow symbolic links.
func walkFiles(ctx context.Context, dir string, fn func(path, rel string) error) error {
	return filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == dir {
				return err
			}
			return nil // an unreadable subdirectory is skipped, not fatal
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if p != dir && forbidden(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return nil
		}
		return fn(p, filepath.ToSlash(rel))
	})
}

// glob is a compiled glob pattern: slash-separated elements matched with
// path.Match, where an element "**" matches zero or more path elements.
type glob struct{ elems []string }

func compileGlob(pattern string) (*glob, error) {
	if strings.TrimSpace(pattern) == "" {
		return nil, errors.New("pattern is empty; give a glob such as \"**/*.go\"")
	}
	if strings.HasPrefix(pattern, "/") {
		return nil, fmt.Errorf("pattern %q is absolute; patterns are relative to path", pattern)
	}
	var elems []string
	for _, e := range strings.Split(strings.TrimPrefix(filepath.ToSlash(pattern), "./"), "/") {
		if e == "**" {
			// A run of ** matches what one does; collapsing it avoids
			// needless backtracking.
			if len(elems) == 0 || elems[len(elems)-1] != "**" {
				elems = append(elems, e)
			}
			continue
		}
		elems = append(elems, e)
		if _, err := path.Match(e, ""); err != nil {
			return nil, fmt.Errorf("bad glob pattern %q: %v", pattern, err)
		}
	}
	return &glob{elems: elems}, nil
}

func (g *glob) match(rel string) bool { return matchElems(g.elems, strings.Split(rel, "/")) }

func matchElems(pat, name []string) bool {
	for len(pat) > 0 {
		if pat[0] == "**" {
			// Try every split point.
			rest := pat[1:]
			for i := 0; i <= len(name); i++ {
				if matchElems(rest, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if ok, _ := path.Match(pat[0], name[0]); !ok {
			return false
		}
		pat, name = pat[1:], name[1:]
	}
	return len(name) == 0
}
