package tools

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// maxGrepLineBytes is how much of a matching line is shown.
const maxGrepLineBytes = 300

type grepInput struct {
	Pattern    string `json:"pattern"`
	Path       string `json:"path"`
	Glob       string `json:"glob"`
	IgnoreCase bool   `json:"ignore_case"`
}

func grepTool(wt *worktree) Tool {
	return newTool("grep",
		fmt.Sprintf("Search file contents with a regular expression (Go RE2 syntax) under path (default the worktree root), skipping binary files. Shows the first %d matching lines as path:line: text, then how many more matches there are and in which files.", MaxGrepResults),
		`{"type":"object","properties":{
  "pattern":{"type":"string","description":"Regular expression, e.g. \"func \\w+Handler\""},
  "path":{"type":"string","description":"File or directory to search, relative to the worktree root; default the root"},
  "glob":{"type":"string","description":"Only search files whose path relative to path matches this glob, e.g. \"**/*.go\""},
  "ignore_case":{"type":"boolean","description":"Match case-insensitively"}},
 "required":["pattern"],"additionalProperties":false}`,
		true, func(ctx context.Context, in grepInput) (string, error) {
			if in.Pattern == "" {
				return "", fmt.Errorf("pattern is empty; give a regular expression")
			}
			expr := in.Pattern
			if in.IgnoreCase {
				expr = "(?i)" + expr
			}
			re, err := regexp.Compile(expr)
			if err != nil {
				return "", fmt.Errorf("bad regular expression %q: %v", in.Pattern, err)
			}
			var filter *glob
			if in.Glob != "" {
				if filter, err = compileGlob(in.Glob); err != nil {
					return "", err
				}
			}
			if in.Path == "" {
				in.Path = "."
			}
			base, err := wt.resolve(in.Path)
			if err != nil {
				return "", err
			}
			return grep(ctx, wt, base, re, filter)
		})
}

func grep(ctx context.Context, wt *worktree, base resolved, re *regexp.Regexp, filter *glob) (string, error) {
	var (
		out       strings.Builder
		shown     int
		total     int
		files     int
		moreFiles []string // files with matches beyond those shown, with counts
	)
	search := func(p, rel string) error {
		if filter != nil && !filter.match(rel) {
			return nil
		}
		info, err := os.Stat(p)
		if err != nil || info.Size() > MaxGrepFileBytes {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil || isBinary(data) {
			return nil
		}
		display := wt.relSlash(p)
		n, hidden := 0, 0
		lineNo := 0
		for len(data) > 0 {
			lineNo++
			line := data
			if i := bytes.IndexByte(data, '\n'); i >= 0 {
				line, data = data[:i], data[i+1:]
			} else {
				data = nil
			}
			if !re.Match(line) {
				continue
			}
			n++
			if shown < MaxGrepResults {
				shown++
				text := string(bytes.TrimRight(line, "\r"))
				if len(text) > maxGrepLineBytes {
					text = text[:maxGrepLineBytes] + " ..."
				}
				fmt.Fprintf(&out, "%s:%d: %s\n", display, lineNo, text)
			} else {
				hidden++
			}
		}
		if n > 0 {
			files++
			total += n
		}
		if hidden > 0 {
			moreFiles = append(moreFiles, fmt.Sprintf("%s (%d)", display, hidden))
		}
		return nil
	}

	info, err := os.Stat(base.abs)
	if err != nil {
		return "", fileErr(base, err)
	}
	if info.IsDir() {
		err = walkFiles(ctx, base.abs, search)
	} else {
		err = search(base.abs, info.Name())
	}
	if err != nil {
		return "", err
	}
	if total == 0 {
		return fmt.Sprintf("no matches for %q in %s", re.String(), displayPath(base)), nil
	}
	if total > shown {
		fmt.Fprintf(&out, "... %d matches in %d files in all; %d more not shown, in: ", total, files, total-shown)
		const maxNamed = 20
		named := moreFiles[:min(len(moreFiles), maxNamed)]
		out.WriteString(strings.Join(named, ", "))
		if len(moreFiles) > maxNamed {
			fmt.Fprintf(&out, ", and %d more files", len(moreFiles)-maxNamed)
		}
		out.WriteString("\nNarrow the pattern, path or glob to see them.\n")
	} else {
		fmt.Fprintf(&out, "%d matches in %d files\n", total, files)
	}
	return out.String(), nil
}
