package resolve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// Plugin is a directory in the Claude Code plugin layout: agents/*.md,
// commands/*.md, skills/<name>/SKILL.md, references/language-manifest.md.
type Plugin struct {
	Name string `json:"name"`
	Dir  string `json:"dir"`
	// Origin says which search location found it.
	Origin string `json:"origin"`
}

// location is a place plugins are searched, in precedence order.
type location struct {
	dir      string
	origin   string
	explicit bool // named by the user: missing is worth a warning
}

// pluginLocations lists where plugins are found, highest precedence first:
// --plugin-dir values, then the project's .sluice/plugins and
// .claude/plugins, then the user's config dir.
func pluginLocations(root string, opts Options) []location {
	var locs []location
	for _, d := range opts.PluginDirs {
		locs = append(locs, location{dir: d, origin: "--plugin-dir", explicit: true})
	}
	locs = append(locs,
		location{dir: filepath.Join(root, ".sluice", "plugins"), origin: "project .sluice/plugins"},
		location{dir: filepath.Join(root, ".claude", "plugins"), origin: "project .claude/plugins"},
	)
	if opts.UserConfigDir != "" {
		locs = append(locs, location{dir: filepath.Join(opts.UserConfigDir, "plugins"), origin: "user config"})
	}
	return locs
}

// looksLikePlugin reports whether dir has any part of the plugin layout.
func looksLikePlugin(dir string) bool {
	for _, p := range []string{"agents", "skills", "commands", "references", filepath.Join(".claude-plugin", "plugin.json")} {
		if _, err := os.Stat(filepath.Join(dir, p)); err == nil {
			return true
		}
	}
	return false
}

// discoverPlugins finds every plugin. A location is either a plugin itself
// or a directory of plugins. When two plugins share a name the first found
// wins and the other is reported as shadowed.
func discoverPlugins(root string, opts Options, warn func(Warning)) []Plugin {
	var out []Plugin
	byName := map[string]int{}
	add := func(p Plugin) {
		if i, dup := byName[p.Name]; dup {
			warn(Warning{File: p.Dir, Message: fmt.Sprintf("plugin %q (%s) is shadowed by %s (%s)", p.Name, p.Origin, out[i].Dir, out[i].Origin)})
			return
		}
		byName[p.Name] = len(out)
		out = append(out, p)
	}
	for _, loc := range pluginLocations(root, opts) {
		info, err := os.Stat(loc.dir)
		if err != nil {
			if loc.explicit || !errors.Is(err, fs.ErrNotExist) {
				warn(Warning{File: loc.dir, Message: fmt.Sprintf("plugin directory (%s) cannot be used: %v", loc.origin, unwrapPath(err))})
			}
			continue
		}
		if !info.IsDir() {
			warn(Warning{File: loc.dir, Message: fmt.Sprintf("plugin directory (%s) is not a directory; pass a directory", loc.origin)})
			continue
		}
		if looksLikePlugin(loc.dir) {
			add(Plugin{Name: pluginName(loc.dir, warn), Dir: loc.dir, Origin: loc.origin})
			continue
		}
		entries, err := os.ReadDir(loc.dir)
		if err != nil {
			warn(Warning{File: loc.dir, Message: fmt.Sprintf("cannot read plugin directory (%s): %v", loc.origin, unwrapPath(err))})
			continue
		}
		sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
		for _, e := range entries {
			dir := filepath.Join(loc.dir, e.Name())
			info, err := os.Stat(dir) // follows symlinked plugins
			if err != nil {
				if e.Type()&fs.ModeSymlink != 0 {
					warn(Warning{File: dir, Message: fmt.Sprintf("plugin symlink cannot be followed: %v", unwrapPath(err))})
				}
				continue
			}
			if info.IsDir() && looksLikePlugin(dir) {
				add(Plugin{Name: pluginName(dir, warn), Dir: dir, Origin: loc.origin})
			}
		}
	}
	return out
}

// pluginName is the name in .claude-plugin/plugin.json, else the directory
// name.
func pluginName(dir string, warn func(Warning)) string {
	manifest := filepath.Join(dir, ".claude-plugin", "plugin.json")
	data, err := os.ReadFile(manifest)
	if err != nil {
		return filepath.Base(dir)
	}
	var meta struct {
		Name string `json:"name"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		warn(Warning{File: manifest, Message: fmt.Sprintf("invalid plugin.json (%v); using the directory name %q", err, filepath.Base(dir))})
		return filepath.Base(dir)
	}
	if meta.Name == "" {
		return filepath.Base(dir)
	}
	return meta.Name
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
