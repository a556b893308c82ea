package config

import "path/filepath"

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
