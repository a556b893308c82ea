package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/gofrs/flock"
)

// ErrLocked is matched (errors.Is) by every *LockedError.
var ErrLocked = errors.New("locked by another process")

// LockedError says that another process holds a run's or a repository's lock.
type LockedError struct {
	// Dir is the run directory, or the .sluice directory for a repository lock.
	Dir string
	// Path is the lock file.
	Path string
	// PID is the holder's process id, or 0 when it could not be read (the
	// holder may not have written it yet).
	PID int
	// Repo is true for the repository lock taken by `sluice run`.
	Repo bool
}

func (e *LockedError) Error() string {
	holder := "another process"
	if e.PID > 0 {
		holder = fmt.Sprintf("process %d", e.PID)
	}
	if e.Repo {
		return fmt.Sprintf("another sluice run (%s) holds the repository lock %s; wait for it to finish or stop it", holder, e.Path)
	}
	return fmt.Sprintf("run directory %s is in use by %s (lock %s); wait for it to finish or stop it", e.Dir, holder, e.Path)
}

func (e *LockedError) Is(target error) bool { return target == ErrLocked }

// fileLock is an advisory flock held for as long as the process lives or
// until release. The kernel drops it when the process dies, so a crash never
// leaves a stale lock behind.
type fileLock struct {
	fl *flock.Flock
}

// acquire takes the lock at path without waiting and writes this process's
// pid into the file for whoever finds it taken.
func acquire(path, dir string, repo bool) (*fileLock, error) {
	fl := flock.New(path, flock.SetPermissions(0o644))
	ok, err := fl.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if !ok {
		return nil, &LockedError{Dir: dir, Path: path, PID: readPID(path), Repo: repo}
	}
	// O_TRUNC keeps the inode, so the flock stays on the file we rewrite.
	if err := os.WriteFile(path, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		_ = fl.Unlock()
		return nil, fmt.Errorf("write pid to lock %s: %w", path, err)
	}
	return &fileLock{fl: fl}, nil
}

func readPID(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return 0
	}
	return pid
}

// release empties the pid and drops the lock. The file itself stays:
// removing a lock file lets two processes lock two different inodes.
func (l *fileLock) release() error {
	if l == nil || l.fl == nil {
		return nil
	}
	path := l.fl.Path()
	truncErr := os.Truncate(path, 0)
	err := l.fl.Unlock()
	l.fl = nil
	if err != nil {
		return fmt.Errorf("unlock %s: %w", path, err)
	}
	if truncErr != nil {
		return fmt.Errorf("clear lock: %w", truncErr)
	}
	return nil
}

// LockRepo takes the repository lock in sluiceDir (the repository's .sluice
// directory, created if missing) so that two `sluice run` in one repository
// refuse each other. A second caller gets a *LockedError naming the holder's
// pid. unlock releases it; the kernel also releases it if the process dies.
func LockRepo(sluiceDir string) (unlock func() error, err error) {
	if err := os.MkdirAll(sluiceDir, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", sluiceDir, err)
	}
	path := filepath.Join(sluiceDir, "lock")
	l, err := acquire(path, sluiceDir, true)
	if err != nil {
		return nil, err
	}
	return l.release, nil
}

// InUse says whether a process drives the run in dir (holds its lock),
// and which. It reads the pid the holder wrote and asks whether that
// process lives, without touching the lock: a reader polling it must never
// make a starting resume find the lock taken. A clean exit empties the pid;
// a crashed holder's pid names a process that is gone.
func InUse(dir string) (pid int, inUse bool, err error) {
	pid = readPID(filepath.Join(dir, LockFile))
	if pid == 0 {
		return 0, false, nil
	}
	p, err := os.FindProcess(pid)
	if err != nil {
		return 0, false, nil
	}
	if err := p.Signal(syscall.Signal(0)); err != nil && !errors.Is(err, syscall.EPERM) {
		return 0, false, nil
	}
	return pid, true, nil
}
