package tools

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// ErrOutsideWorktree is wrapped by every path error for a path that leaves
// the worktree, directly or through a symbolic link.
var ErrOutsideWorktree = errors.New("outside the worktree")

// ErrForbiddenPath is wrapped by every path error for a path inside .git or
// .sluice, which agents may not touch.
var ErrForbiddenPath = errors.New("forbidden path")

// forbidden are directory names agents may neither read nor write at any
// depth: git's metadata (a worktree's .git is a file naming the real one)
// and sluice's own state.
func forbidden(name string) bool { return name == ".git" || name == ".sluice" }

// worktree confines paths to one directory tree.
type worktree struct {
	root    string // as given, cleaned and absolute
	realDir string // root with symbolic links resolved
}

func newWorktree(root string) (*worktree, error) {
	if root == "" {
		return nil, errors.New("tools: the worktree root is empty")
	}
	abs, err := filepath.Abs(root)
	if err != nil {
		return nil, fmt.Errorf("tools: worktree root %s: %w", root, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("tools: worktree root: %w", err)
	}
	info, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("tools: worktree root: %w", err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("tools: worktree root %s is not a directory", root)
	}
	return &worktree{root: abs, realDir: real}, nil
}

// resolved is a path inside the worktree.
type resolved struct {
	abs string // absolute, symbolic links resolved
	rel string // relative to the worktree, slash-separated; "." for the root
}

// resolve confines a path given by the model to the worktree. The path may
// be relative to the worktree or absolute; it is cleaned, its symbolic links
// are resolved (for a path that does not exist yet, those of its longest
// existing prefix), and the result must lie inside the worktree and outside
// .git and .sluice.
func (w *worktree) resolve(p string) (resolved, error) {
	if strings.TrimSpace(p) == "" {
		return resolved{}, errors.New("path is empty; give a path relative to the worktree root, e.g. \"main.go\"")
	}
	if strings.ContainsRune(p, 0) {
		return resolved{}, fmt.Errorf("path %q contains a NUL byte", p)
	}
	var joined string
	if filepath.IsAbs(p) {
		joined = filepath.Clean(p)
		// An absolute path may name the worktree by either spelling.
		if rel, ok := within(w.realDir, joined); ok {
			joined = filepath.Join(w.realDir, rel)
		} else if rel, ok := within(w.root, joined); ok {
			joined = filepath.Join(w.realDir, rel)
		} else {
			return resolved{}, fmt.Errorf("path %s is %w (%s); use a path inside it", p, ErrOutsideWorktree, w.root)
		}
	} else {
		joined = filepath.Join(w.realDir, p)
		if _, ok := within(w.realDir, joined); !ok {
			return resolved{}, fmt.Errorf("path %s escapes the worktree: %w", p, ErrOutsideWorktree)
		}
	}
	if err := checkForbidden(p, w.realDir, joined); err != nil {
		return resolved{}, err
	}

	// Resolve the symbolic links of the longest prefix that exists; the rest
	// does not exist yet, so it holds no links.
	existing, rest := joined, ""
	for {
		if _, err := os.Lstat(existing); err == nil {
			break
		} else if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, fs.ErrInvalid) && !errors.Is(err, syscall.ENOTDIR) {
			return resolved{}, fmt.Errorf("path %s: %w", p, err)
		}
		parent := filepath.Dir(existing)
		if parent == existing {
			break
		}
		rest = filepath.Join(filepath.Base(existing), rest)
		existing = parent
	}
	real, err := filepath.EvalSymlinks(existing)
	if errors.Is(err, fs.ErrNotExist) {
		return resolved{}, fmt.Errorf("path %s goes through a broken symbolic link", p)
	}
	if err != nil {
		return resolved{}, fmt.Errorf("path %s: %w", p, err)
	}
	final := filepath.Join(real, rest)
	rel, ok := within(w.realDir, final)
	if !ok {
		return resolved{}, fmt.Errorf("path %s resolves through a symbolic link to %s, which is %w", p, final, ErrOutsideWorktree)
	}
	if err := checkForbidden(p, w.realDir, final); err != nil {
		return resolved{}, err
	}
	return resolved{abs: final, rel: filepath.ToSlash(rel)}, nil
}

// within reports whether p is dir or beneath it, and p relative to dir.
func within(dir, p string) (string, bool) {
	rel, err := filepath.Rel(dir, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "", false
	}
	return rel, true
}

func checkForbidden(given, root, p string) error {
	rel, ok := within(root, p)
	if !ok {
		return nil
	}
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if forbidden(part) {
			return fmt.Errorf("path %s is inside %s, which agents may not read or change: %w", given, part, ErrForbiddenPath)
		}
	}
	return nil
}
