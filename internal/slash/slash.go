// Package slash loads slash commands — Markdown prompt templates in
// .claude/commands/ and .sluice/commands/, Claude Code's convention (seed
// 002 §3) — and expands a goal written as "/name args" into the command's
// text, so `sluice run /fix-issue 42` runs the goal the template describes.
package slash

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Command is one slash command.
type Command struct {
	// Name is what follows the slash: the file's path under the commands
	// directory without .md, subdirectories joined by ":" (frontend/lint.md
	// is /frontend:lint).
	Name         string
	Description  string
	ArgumentHint string
	// Body is the template: the Markdown after the front matter, with
	// $ARGUMENTS and $1..$9 placeholders.
	Body string
	// Source is the file it came from.
	Source string
}

// Dirs returns where commands are looked for, relative to the project root,
// lowest precedence first: a command in .sluice/commands replaces one of the
// same name in .claude/commands.
func Dirs() []string {
	return []string{filepath.Join(".claude", "commands"), filepath.Join(".sluice", "commands")}
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]*(:[A-Za-z0-9_][A-Za-z0-9_.-]*)*$`)

// Load reads every command of the project. A file that cannot be used is
// reported and skipped; the others load.
func Load(projectRoot string) (map[string]Command, []error) {
	cmds := map[string]Command{}
	var errs []error
	for _, d := range Dirs() {
		base := filepath.Join(projectRoot, d)
		var files []string
		err := filepath.WalkDir(base, func(p string, e fs.DirEntry, err error) error {
			if err != nil {
				if errors.Is(err, fs.ErrNotExist) && p == base {
					return fs.SkipDir
				}
				errs = append(errs, fmt.Errorf("read slash commands: %w", err))
				return nil
			}
			if !e.IsDir() && strings.HasSuffix(e.Name(), ".md") {
				files = append(files, p)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("read slash commands in %s: %w", base, err))
			continue
		}
		sort.Strings(files)
		for _, p := range files {
			rel, _ := filepath.Rel(base, p)
			name := strings.ReplaceAll(filepath.ToSlash(strings.TrimSuffix(rel, ".md")), "/", ":")
			if !nameRE.MatchString(name) {
				errs = append(errs, fmt.Errorf("%s: %q is not a usable command name: rename the file to letters, digits, - and _", p, name))
				continue
			}
			data, err := os.ReadFile(p)
			if err != nil {
				errs = append(errs, fmt.Errorf("read slash command: %w", err))
				continue
			}
			c, err := Parse(data, p)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			c.Name = name
			cmds[name] = c
		}
	}
	return cmds, errs
}

// Parse reads one command file: optional YAML front matter (description,
// argument-hint; other keys of Claude Code's format are ignored) and the
// template body. source names the file in errors.
func Parse(data []byte, source string) (Command, error) {
	text := strings.ReplaceAll(string(bytes.TrimPrefix(data, []byte("\ufeff"))), "\r\n", "\n")
	c := Command{Source: source}
	if rest, ok := strings.CutPrefix(text, "---\n"); ok {
		header, body, found := strings.Cut(rest, "\n---\n")
		if !found {
			if h, ok := strings.CutSuffix(rest, "\n---"); ok {
				header, body, found = h, "", true
			}
		}
		if !found {
			return Command{}, fmt.Errorf("%s: front matter is not closed: add a line --- after the YAML keys", source)
		}
		var fm struct {
			Description  string `yaml:"description"`
			ArgumentHint string `yaml:"argument-hint"`
		}
		if err := yaml.Unmarshal([]byte(header), &fm); err != nil {
			return Command{}, fmt.Errorf("%s: front matter: %w", source, err)
		}
		c.Description, c.ArgumentHint = strings.TrimSpace(fm.Description), strings.TrimSpace(fm.ArgumentHint)
		text = body
	}
	c.Body = strings.TrimSpace(text)
	if c.Body == "" {
		return Command{}, fmt.Errorf("%s: the command has no text: write the prompt below the front matter", source)
	}
	return c, nil
}

// ErrUnknown is wrapped by Expand's error for a command that does not
// exist.
var ErrUnknown = errors.New("unknown slash command")

var invocationRE = regexp.MustCompile(`^/([A-Za-z0-9_][A-Za-z0-9_.-]*(?::[A-Za-z0-9_][A-Za-z0-9_.-]*)*)(?:\s|$)`)

// Expand expands goal when it is a slash command invocation, "/name args":
// the command's body with $ARGUMENTS replaced by the argument text as
// written and $1..$9 by the arguments split like a shell does (quotes group,
// a backslash escapes); a missing positional argument is empty. A body with
// no placeholder gets the arguments appended. used is false, and goal is
// returned unchanged, when goal does not start with a command name (a goal
// such as "/usr/bin is missing" is not one).
func Expand(goal string, cmds map[string]Command) (expanded string, used bool, err error) {
	trimmed := strings.TrimSpace(goal)
	m := invocationRE.FindStringSubmatch(trimmed)
	if m == nil {
		return goal, false, nil
	}
	name := m[1]
	c, ok := cmds[name]
	if !ok {
		known := make([]string, 0, len(cmds))
		for n := range cmds {
			known = append(known, "/"+n)
		}
		sort.Strings(known)
		list := "none are defined; add Markdown files to .claude/commands/ or .sluice/commands/"
		if len(known) > 0 {
			list = "known: " + strings.Join(known, ", ")
		}
		return "", true, fmt.Errorf("%w /%s: %s", ErrUnknown, name, list)
	}
	argText := strings.TrimSpace(trimmed[len("/"+name):])
	args, err := Split(argText)
	if err != nil {
		return "", true, fmt.Errorf("/%s: arguments: %w", name, err)
	}
	return substitute(c.Body, argText, args), true, nil
}

// ExpandArgs is Expand for a goal given as command-line arguments, as in
// `sluice run /fix-issue 42 "very high"`: when args[0] is "/name" the
// remaining arguments are the positional ones exactly as the shell split
// them, and $ARGUMENTS is them joined by spaces. Otherwise the goal is the
// arguments joined by spaces, unexpanded.
func ExpandArgs(args []string, cmds map[string]Command) (expanded string, used bool, err error) {
	if len(args) == 0 {
		return "", false, nil
	}
	m := invocationRE.FindStringSubmatch(args[0])
	if m == nil || len(m[0]) != len(args[0]) {
		return Expand(strings.Join(args, " "), cmds)
	}
	c, ok := cmds[m[1]]
	if !ok {
		return Expand(args[0], cmds) // the unknown-command error
	}
	return substitute(c.Body, strings.Join(args[1:], " "), args[1:]), true, nil
}

var placeholderRE = regexp.MustCompile(`\$(ARGUMENTS|[1-9])`)

func substitute(body, argText string, args []string) string {
	if !placeholderRE.MatchString(body) {
		if argText == "" {
			return body
		}
		return body + "\n\nArguments: " + argText
	}
	return placeholderRE.ReplaceAllStringFunc(body, func(p string) string {
		if p == "$ARGUMENTS" {
			return argText
		}
		i := int(p[1] - '1')
		if i < len(args) {
			return args[i]
		}
		return ""
	})
}

// Split splits s into words the way a POSIX shell does for plain words:
// whitespace separates; single quotes keep everything literally; double
// quotes keep everything but \" and \\; a backslash outside quotes escapes
// the next character. An unterminated quote is an error.
func Split(s string) ([]string, error) {
	var out []string
	var cur strings.Builder
	inWord := false
	for i := 0; i < len(s); i++ {
		ch := s[i]
		switch {
		case ch == ' ' || ch == '\t' || ch == '\n':
			if inWord {
				out = append(out, cur.String())
				cur.Reset()
				inWord = false
			}
		case ch == '\\':
			inWord = true
			if i+1 < len(s) {
				i++
				cur.WriteByte(s[i])
			}
		case ch == '\'':
			inWord = true
			j := strings.IndexByte(s[i+1:], '\'')
			if j < 0 {
				return nil, fmt.Errorf("unterminated single quote at byte %d: close it with '", i)
			}
			cur.WriteString(s[i+1 : i+1+j])
			i += j + 1
		case ch == '"':
			inWord = true
			closed := false
			for i++; i < len(s); i++ {
				if s[i] == '\\' && i+1 < len(s) && (s[i+1] == '"' || s[i+1] == '\\') {
					i++
					cur.WriteByte(s[i])
					continue
				}
				if s[i] == '"' {
					closed = true
					break
				}
				cur.WriteByte(s[i])
			}
			if !closed {
				return nil, errors.New(`unterminated double quote: close it with "`)
			}
		default:
			inWord = true
			cur.WriteByte(ch)
		}
	}
	if inWord {
		out = append(out, cur.String())
	}
	return out, nil
}
