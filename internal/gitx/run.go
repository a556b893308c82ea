package gitx

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
)

// GitPath resolves a path inside the repository's git directory (e.g.
// "info/exclude"), wherever that directory is.
func (r *Repo) GitPath(rel string) (string, error) {
	out, err := git(context.Background(), r.root, nil, "rev-parse", "--git-path", rel)
	if err != nil {
		return "", fmt.Errorf("locate %s in the git directory: %w", rel, err)
	}
	p := strings.TrimSpace(out)
	if !filepath.IsAbs(p) {
		p = filepath.Join(r.root, p)
	}
	return p, nil
}

// ResetHard discards every change in worktree, tracked or not (ignored
// files stay), and moves its branch back to sha.
func (r *Repo) ResetHard(ctx context.Context, worktree, sha string) error {
	// Moving the branch is a ref update: serialized like every other.
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := git(ctx, worktree, nil, "reset", "--quiet", "--hard", sha); err != nil {
		return fmt.Errorf("reset %s to %s: %w", worktree, short(sha), err)
	}
	if _, err := git(ctx, worktree, nil, "clean", "--quiet", "-fd"); err != nil {
		return fmt.Errorf("clean %s: %w", worktree, err)
	}
	return nil
}

// Diff returns the worktree's committed and uncommitted changes since base
// as a unified diff, cut to at most max bytes with a note saying so.
func (r *Repo) Diff(ctx context.Context, worktree, base string, max int) (string, error) {
	out, err := git(ctx, worktree, nil, "diff", "--no-color", "--no-ext-diff", base, "--")
	if err != nil {
		return "", fmt.Errorf("diff %s since %s: %w", worktree, short(base), err)
	}
	if max > 0 && len(out) > max {
		out = out[:max] + fmt.Sprintf("\n[diff cut at %d of %d bytes; read the files for the rest]\n", max, len(out))
	}
	return out, nil
}
