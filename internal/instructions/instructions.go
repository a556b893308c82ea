// Package instructions loads the project instructions that every agent's
// system prompt carries: CLAUDE.md and AGENTS.md from the user's config
// directory (global) and from the project. Global instructions come first and
// the project's last, so the project has the last word; the total is bounded
// by a token budget, and exceeding it is an error rather than a silent cut.
package instructions

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Scope says where an instruction file came from.
type Scope string

const (
	ScopeGlobal  Scope = "global"
	ScopeProject Scope = "project"
)

// GlobalFiles returns the files read from the user's config directory, in
// prompt order.
func GlobalFiles() []string { return []string{"CLAUDE.md", "AGENTS.md"} }

// ProjectFiles returns the files read from the project root, in prompt order.
func ProjectFiles() []string {
	return []string{"CLAUDE.md", "AGENTS.md", filepath.Join(".claude", "CLAUDE.md")}
}

// File is one loaded instruction file.
type File struct {
	// Path names the file: absolute for global files, relative to the
	// project root for project files, so the composed text is identical in
	// every worktree of a project (and provider prompt caches hit).
	Path   string
	Scope  Scope
	Text   string
	Tokens int // EstimateTokens of the file's block in the composed text
}

// Set is the composed instructions, global files first.
type Set struct {
	files []File
	text  string
}

// Files returns the loaded files in prompt order.
func (s *Set) Files() []File { return append([]File(nil), s.files...) }

// Text returns the instructions as one text: each file in a block naming its
// path and scope, global blocks before project blocks. It is "" when no file
// was found.
func (s *Set) Text() string { return s.text }

// Tokens is the estimated token count of Text.
func (s *Set) Tokens() int { return EstimateTokens(s.text) }

// EstimateTokens approximates a text's token count as its length in bytes
// divided by four, rounded up: close to what Anthropic and OpenAI tokenizers
// give for English prose and code, and cheap enough to need no tokenizer.
func EstimateTokens(s string) int { return (len(s) + 3) / 4 }

// BudgetError is returned when the instructions exceed the token budget. It
// names every file and its size so the user can decide what to cut.
type BudgetError struct {
	Budget int
	Total  int
	Files  []File
}

func (e *BudgetError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "project instructions are about %d tokens, over the budget of %d:", e.Total, e.Budget)
	for _, f := range e.Files {
		fmt.Fprintf(&b, "\n  %s (%s): %d tokens", f.Path, f.Scope, f.Tokens)
	}
	b.WriteString("\nshorten these files or raise the instruction token budget in the config")
	return b.String()
}

// Load reads the global instruction files from userConfigDir and the project
// files from projectRoot and composes them. Either directory may be "" to
// skip it. Missing and empty files are skipped; a file that is the same as
// one already loaded (a symlink, or identical content) is loaded once. A
// tokenBudget of zero or less means no limit; otherwise instructions over
// the budget return a *BudgetError.
//
// Claude Code's ~/.claude/CLAUDE.md is deliberately not read: sluice's
// global instructions live in its own config directory, so that a user's
// interactive-assistant preferences do not silently steer sluice's agents.
func Load(projectRoot, userConfigDir string, tokenBudget int) (*Set, error) {
	var cands []File
	if userConfigDir != "" {
		for _, name := range GlobalFiles() {
			cands = append(cands, File{Path: filepath.Join(userConfigDir, name), Scope: ScopeGlobal})
		}
	}
	if projectRoot != "" {
		for _, name := range ProjectFiles() {
			cands = append(cands, File{Path: name, Scope: ScopeProject})
		}
	}

	var (
		set      Set
		seen     []os.FileInfo
		contents [][]byte
		blocks   []string
	)
	for _, c := range cands {
		full := c.Path
		if c.Scope == ScopeProject {
			full = filepath.Join(projectRoot, c.Path)
		}
		info, err := os.Stat(full)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading instructions %s: %w", full, err)
		}
		if info.IsDir() {
			return nil, fmt.Errorf("instructions %s is a directory; it must be a Markdown file", full)
		}
		if sameAsAny(info, seen) {
			continue
		}
		data, err := os.ReadFile(full)
		if err != nil {
			return nil, fmt.Errorf("reading instructions %s: %w", full, err)
		}
		data = bytes.TrimSpace(data)
		if len(data) == 0 || containsBytes(contents, data) {
			continue
		}
		seen = append(seen, info)
		contents = append(contents, data)

		c.Text = string(data)
		block := fmt.Sprintf("<instructions source=%q scope=%q>\n%s\n</instructions>", filepath.ToSlash(c.Path), c.Scope, data)
		c.Tokens = EstimateTokens(block)
		blocks = append(blocks, block)
		set.files = append(set.files, c)
	}
	set.text = strings.Join(blocks, "\n\n")
	if tokenBudget > 0 && set.Tokens() > tokenBudget {
		return nil, &BudgetError{Budget: tokenBudget, Total: set.Tokens(), Files: set.Files()}
	}
	return &set, nil
}

func sameAsAny(info os.FileInfo, seen []os.FileInfo) bool {
	for _, s := range seen {
		if os.SameFile(info, s) {
			return true
		}
	}
	return false
}

func containsBytes(list [][]byte, b []byte) bool {
	for _, x := range list {
		if bytes.Equal(x, b) {
			return true
		}
	}
	return false
}
