// Package detect is step 1 of role resolution (seed 000): it finds the
// language markers at a project's root, counts source files per language
// (honouring .gitignore and skipping vendored and generated trees) and picks
// the primary language.
package detect

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
)

// Language names as they appear in sluice's output.
const (
	Python     = "python"
	TypeScript = "typescript"
	Rust       = "rust"
	Go         = "go"
	Java       = "java"
	CPP        = "cpp"
)

// languageOrder lists every language sluice detects, in the order of the
// seed's marker table. Ties in source counts are broken by this order.
var languageOrder = []string{Python, TypeScript, Rust, Go, Java, CPP}

// LanguageNames returns the detectable languages in tie-break order.
func LanguageNames() []string { return append([]string(nil), languageOrder...) }

var markers = map[string][]string{
	Python:     {"pyproject.toml", "setup.py", "setup.cfg", "requirements.txt", "Pipfile"},
	TypeScript: {"package.json", "tsconfig.json", "deno.json"},
	Rust:       {"Cargo.toml"},
	Go:         {"go.mod"},
	Java:       {"pom.xml", "build.gradle", "build.gradle.kts"},
	CPP:        {"CMakeLists.txt", "Makefile", "meson.build"},
}

var extensions = map[string][]string{
	Python:     {".py", ".pyi"},
	TypeScript: {".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"},
	Rust:       {".rs"},
	Go:         {".go"},
	Java:       {".java"},
	CPP:        {".c", ".cc", ".cpp", ".cxx", ".h", ".hh", ".hpp", ".hxx"},
}

// Markers returns the marker file names of a language.
func Markers(lang string) []string { return append([]string(nil), markers[lang]...) }

// SourceExtensions returns the file extensions counted as a language's
// source files (with the leading dot).
func SourceExtensions(lang string) []string { return append([]string(nil), extensions[lang]...) }

// skipDirs are never descended into: version control, dependencies and
// build output. .sluice holds run worktrees, which are copies of the tree.
var skipDirs = map[string]bool{
	".git": true, ".hg": true, ".svn": true, ".sluice": true,
	"node_modules": true, "vendor": true, "target": true, "dist": true,
	"build": true, ".venv": true, "__pycache__": true,
}

// Language is one detected language.
type Language struct {
	Name        string   `json:"name"`
	Markers     []string `json:"markers"`
	SourceFiles int      `json:"source_files"`
}

// Warning is a problem found during detection; it never stops resolution.
type Warning struct {
	Message string
	File    string
	Line    int
}

// Result is what step 1 decided.
type Result struct {
	// Primary is the language whose manifest resolves roles; "" when no
	// marker was found.
	Primary string
	// Languages lists every language with a marker, primary first, then by
	// source count.
	Languages []Language
	// SourceFiles counts source files per language for every language,
	// marker or not; gates are inferred from it when no manifest applies.
	SourceFiles map[string]int
	Warnings    []Warning
}

// ErrNotDir is returned when the project root is not a directory.
var ErrNotDir = errors.New("not a directory")

// Detect scans root (a directory on disk).
func Detect(ctx context.Context, root string) (*Result, error) {
	info, err := os.Stat(root)
	if err != nil {
		return nil, fmt.Errorf("project root %s: %w; pass an existing, readable project directory", root, unwrapPath(err))
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("project root %s: %w; pass a project directory", root, ErrNotDir)
	}
	return DetectFS(ctx, os.DirFS(root), root)
}

// DetectFS scans the root of fsys; display is the root's name in warnings.
func DetectFS(ctx context.Context, fsys fs.FS, display string) (*Result, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("read project root %s: %w", display, err)
	}
	res := &Result{SourceFiles: make(map[string]int, len(languageOrder))}
	warn := func(file, msg string) {
		res.Warnings = append(res.Warnings, Warning{Message: msg, File: file})
	}

	found := map[string][]string{}
	for _, e := range entries {
		for _, lang := range languageOrder {
			for _, m := range markers[lang] {
				if e.Name() != m {
					continue
				}
				if e.Type()&fs.ModeSymlink != 0 {
					if _, err := fs.Stat(fsys, m); err != nil {
						warn(filepath.Join(display, m), fmt.Sprintf("marker %s is a symlink that cannot be followed (%v); ignoring it", m, unwrapPath(err)))
						continue
					}
				} else if e.IsDir() {
					warn(filepath.Join(display, m), fmt.Sprintf("marker %s is a directory, not a file; ignoring it", m))
					continue
				}
				found[lang] = append(found[lang], m)
			}
		}
	}

	w := walker{ctx: ctx, fsys: fsys, display: display, counts: res.SourceFiles, warn: warn}
	for lang, exts := range extensions {
		for _, x := range exts {
			if w.extLang == nil {
				w.extLang = map[string]string{}
			}
			w.extLang[x] = lang
		}
	}
	if err := w.walk(".", entries, nil); err != nil {
		return nil, err
	}

	for _, lang := range languageOrder {
		if ms, ok := found[lang]; ok {
			res.Languages = append(res.Languages, Language{Name: lang, Markers: ms, SourceFiles: res.SourceFiles[lang]})
		}
	}
	if len(res.Languages) == 0 {
		var all []string
		for _, lang := range languageOrder {
			all = append(all, markers[lang]...)
		}
		warn(display, fmt.Sprintf("no language markers found (looked for %s); every role uses general-purpose", strings.Join(all, ", ")))
		return res, nil
	}
	// Stable sort keeps marker-table order among equal counts: the
	// deterministic tie-break.
	sort.SliceStable(res.Languages, func(i, j int) bool {
		return res.Languages[i].SourceFiles > res.Languages[j].SourceFiles
	})
	res.Primary = res.Languages[0].Name
	if len(res.Languages) > 1 && res.Languages[1].SourceFiles == res.Languages[0].SourceFiles {
		var tied []string
		for _, l := range res.Languages {
			if l.SourceFiles == res.Languages[0].SourceFiles {
				tied = append(tied, l.Name)
			}
		}
		warn(display, fmt.Sprintf("tie: %s each have %d source files; chose %s by the fixed order %s (remove a marker to choose otherwise)",
			strings.Join(tied, ", "), res.Languages[0].SourceFiles, res.Primary, strings.Join(languageOrder, ", ")))
	}
	return res, nil
}

// unwrapPath drops the *fs.PathError wrapper, whose relative path would only
// repeat the name already in the message.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

type walker struct {
	ctx     context.Context
	fsys    fs.FS
	display string
	extLang map[string]string
	counts  map[string]int
	warn    func(file, msg string)
}

// walk counts source files under dir, whose entries have been read. It
// never follows symlinks (so loops cannot trap it), skips ignored
// directories before reading them, and reads no file except .gitignore.
func (w *walker) walk(dir string, entries []fs.DirEntry, stack ignoreStack) error {
	if err := w.ctx.Err(); err != nil {
		return err
	}
	rel := func(name string) string {
		if dir == "." {
			return name
		}
		return dir + "/" + name
	}
	for _, e := range entries {
		if e.Name() == ".gitignore" && e.Type().IsRegular() {
			data, err := fs.ReadFile(w.fsys, rel(".gitignore"))
			if err != nil {
				w.warn(filepath.Join(w.display, filepath.FromSlash(rel(".gitignore"))), fmt.Sprintf("cannot read .gitignore (%v); its rules are not applied", unwrapPath(err)))
				break
			}
			base := dir
			if base == "." {
				base = ""
			}
			// Copy so sibling directories do not share a grown backing array.
			stack = append(stack[:len(stack):len(stack)], parseIgnore(base, data))
			break
		}
	}
	if dir == "." {
		if data, err := fs.ReadFile(w.fsys, ".git/info/exclude"); err == nil {
			stack = append(ignoreStack{parseIgnore("", data)}, stack...)
		}
	}
	for _, e := range entries {
		name := e.Name()
		t := e.Type()
		switch {
		case t&fs.ModeSymlink != 0:
			continue
		case t.IsDir():
			if skipDirs[name] {
				continue
			}
			p := rel(name)
			if stack.ignored(p, true) {
				continue
			}
			sub, err := fs.ReadDir(w.fsys, p)
			if err != nil {
				w.warn(filepath.Join(w.display, filepath.FromSlash(p)), fmt.Sprintf("cannot read directory (%v); its files are not counted", unwrapPath(err)))
				if len(sub) == 0 {
					continue
				}
			}
			if err := w.walk(p, sub, stack); err != nil {
				return err
			}
		case t.IsRegular():
			lang, ok := w.extLang[path.Ext(name)]
			if !ok {
				continue
			}
			if len(stack) > 0 && stack.ignored(rel(name), false) {
				continue
			}
			w.counts[lang]++
		}
	}
	return nil
}
