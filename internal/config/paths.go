package config

import (
	"os"
	"path/filepath"
)

// UserDir is sluice's per-user configuration directory:
// $XDG_CONFIG_HOME/sluice, else $HOME/.config/sluice. It is "" when neither
// variable is set.
func UserDir(getenv func(string) string) string {
	if x := getenv("XDG_CONFIG_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(x, "sluice")
	}
	if h := getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "sluice")
	}
	return ""
}

// FindProjectRoot returns the nearest directory at or above dir that holds
// a .sluice directory or a .git entry, or dir itself when none does, so
// that commands run from a subdirectory find the project's configuration.
func FindProjectRoot(dir string) string {
	for d := dir; ; {
		for _, marker := range []string{".sluice", ".git"} {
			if _, err := os.Stat(filepath.Join(d, marker)); err == nil {
				return d
			}
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}
