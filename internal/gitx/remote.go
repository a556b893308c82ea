package gitx

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Fetch updates local refs from remote by refspecs, pruning the refs under
// a refspec's destination that the remote no longer has. A refspec whose
// source matches nothing is no error when it is a glob.
func (r *Repo) Fetch(ctx context.Context, remote string, refspecs ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	args := append([]string{"fetch", "--quiet", "--prune", "--no-tags", "--no-write-fetch-head", remote}, refspecs...)
	if _, err := git(ctx, r.root, nil, args...); err != nil {
		return fmt.Errorf("fetch from %s: %w", remote, err)
	}
	return nil
}

// Push updates the remote's refs by refspecs, atomically: all or none.
func (r *Repo) Push(ctx context.Context, remote string, refspecs ...string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	args := append([]string{"push", "--quiet", "--atomic", "--no-verify", remote}, refspecs...)
	if _, err := git(ctx, r.root, nil, args...); err != nil {
		return fmt.Errorf("push %s to %s: %w", strings.Join(refspecs, " "), remote, err)
	}
	return nil
}

// RefSHA returns the commit a full ref name points to, or "" when there is
// no such ref.
func (r *Repo) RefSHA(ctx context.Context, ref string) (string, error) {
	out, err := git(ctx, r.root, nil, "rev-parse", "--verify", "--quiet", ref+"^{commit}")
	if err != nil {
		var ge *Error
		if errors.As(err, &ge) && exitCode(ge.Err) == 1 {
			return "", nil
		}
		return "", fmt.Errorf("resolve %s: %w", ref, err)
	}
	return strings.TrimSpace(out), nil
}

// Ref is a ref's full name and the object it points to.
type Ref struct {
	Name string
	SHA  string
}

// Refs lists the refs under prefix (e.g. "refs/sluice/run/files/"), oldest
// commit first.
func (r *Repo) Refs(ctx context.Context, prefix string) ([]Ref, error) {
	out, err := git(ctx, r.root, nil, "for-each-ref", "--sort=committerdate", "--format=%(objectname) %(refname)", prefix)
	if err != nil {
		return nil, fmt.Errorf("list refs under %s: %w", prefix, err)
	}
	var refs []Ref
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if sha, name, ok := strings.Cut(line, " "); ok {
			refs = append(refs, Ref{Name: name, SHA: sha})
		}
	}
	return refs, nil
}

// RemoteRef asks remote which commit its ref points to; "" when it has no
// such ref.
func (r *Repo) RemoteRef(ctx context.Context, remote, ref string) (string, error) {
	out, err := git(ctx, r.root, nil, "ls-remote", "--quiet", remote, ref)
	if err != nil {
		return "", fmt.Errorf("ask %s for %s: %w", remote, ref, err)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if sha, name, ok := strings.Cut(line, "\t"); ok && name == ref {
			return sha, nil
		}
	}
	return "", nil
}

// SetBranch points a local branch at sha, creating it if need be. It is
// for a branch no worktree has checked out (git refuses otherwise).
func (r *Repo) SetBranch(ctx context.Context, name, sha string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := git(ctx, r.root, nil, "branch", "--force", "--no-track", name, sha); err != nil {
		return fmt.Errorf("point branch %s at %s: %w", name, short(sha), err)
	}
	return nil
}

// CommitFiles records files (slash-separated paths relative to dir) as the
// tree of a new commit without parents and points ref at it. The commit
// stands apart from the project's history: it carries files between
// clones through a remote.
func (r *Repo) CommitFiles(ctx context.Context, ref, dir string, files []string, message string, id Identity) (string, error) {
	env, err := id.env()
	if err != nil {
		return "", fmt.Errorf("commit files to %s: %w", ref, err)
	}
	index, err := os.CreateTemp("", "sluice-index-*")
	if err != nil {
		return "", fmt.Errorf("commit files to %s: %w", ref, err)
	}
	index.Close()
	os.Remove(index.Name()) // git wants to create the index itself
	defer os.Remove(index.Name())
	indexEnv := append(env, "GIT_INDEX_FILE="+index.Name())

	var paths, info bytes.Buffer
	for _, f := range files {
		paths.WriteString(filepath.Join(dir, filepath.FromSlash(f)) + "\n")
	}
	shas, err := gitInput(ctx, r.root, nil, &paths, "hash-object", "-w", "--no-filters", "--stdin-paths")
	if err != nil {
		return "", fmt.Errorf("store the files of %s: %w", ref, err)
	}
	lines := strings.Fields(shas)
	if len(lines) != len(files) {
		return "", fmt.Errorf("store the files of %s: git stored %d of %d files", ref, len(lines), len(files))
	}
	for i, f := range files {
		fmt.Fprintf(&info, "100644 blob %s\t%s\n", lines[i], f)
	}
	if _, err := gitInput(ctx, r.root, indexEnv, &info, "update-index", "--add", "--index-info"); err != nil {
		return "", fmt.Errorf("build the tree of %s: %w", ref, err)
	}
	tree, err := git(ctx, r.root, indexEnv, "write-tree")
	if err != nil {
		return "", fmt.Errorf("build the tree of %s: %w", ref, err)
	}
	commit, err := git(ctx, r.root, env, "commit-tree", strings.TrimSpace(tree), "-m", message)
	if err != nil {
		return "", fmt.Errorf("commit the files of %s: %w", ref, err)
	}
	sha := strings.TrimSpace(commit)
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, err := git(ctx, r.root, nil, "update-ref", ref, sha); err != nil {
		return "", fmt.Errorf("point %s at the commit of its files: %w", ref, err)
	}
	return sha, nil
}

// Files reads the files of rev's tree that want accepts (nil: all):
// slash-separated path → content.
func (r *Repo) Files(ctx context.Context, rev string, want func(name string) bool) (map[string][]byte, error) {
	out, err := git(ctx, r.root, nil, "ls-tree", "-r", "-z", "--full-tree", rev)
	if err != nil {
		return nil, fmt.Errorf("list the files of %s: %w", rev, err)
	}
	var names []string
	var shas bytes.Buffer
	for _, entry := range splitZ(out) {
		meta, name, ok := strings.Cut(entry, "\t")
		fields := strings.Fields(meta)
		if !ok || len(fields) != 3 || fields[1] != "blob" || (want != nil && !want(name)) {
			continue
		}
		names = append(names, name)
		shas.WriteString(fields[2] + "\n")
	}
	files := make(map[string][]byte, len(names))
	if len(names) == 0 {
		return files, nil
	}
	cmd := command(ctx, r.root, nil, []string{"cat-file", "--batch"})
	cmd.Stdin = &shas
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("read the files of %s: %w", rev, err)
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("read the files of %s: %w", rev, err)
	}
	br := bufio.NewReader(stdout)
	var readErr error
	for _, name := range names {
		// Each answer is "<sha> blob <size>\n<content>\n".
		header, err := br.ReadString('\n')
		if err != nil {
			readErr = err
			break
		}
		fields := strings.Fields(header)
		if len(fields) != 3 {
			readErr = fmt.Errorf("unexpected answer %q", header)
			break
		}
		size, err := strconv.Atoi(fields[2])
		if err != nil {
			readErr = fmt.Errorf("unexpected answer %q", header)
			break
		}
		data := make([]byte, size+1)
		if _, err := io.ReadFull(br, data); err != nil {
			readErr = err
			break
		}
		files[name] = data[:size]
	}
	_, _ = io.Copy(io.Discard, br)
	if err := cmd.Wait(); err != nil || readErr != nil {
		return nil, fmt.Errorf("read the files of %s: %w (%s)", rev, errors.Join(readErr, err), strings.TrimSpace(stderr.String()))
	}
	return files, nil
}

// gitInput is git with stdin (nil: none).
func gitInput(ctx context.Context, dir string, env []string, stdin io.Reader, args ...string) (string, error) {
	cmd := command(ctx, dir, env, args)
	var stdout, stderr bytes.Buffer
	cmd.Stdin, cmd.Stdout, cmd.Stderr = stdin, &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &Error{Dir: dir, Args: args, Stderr: stderr.String(), Err: err}
	}
	return stdout.String(), nil
}
