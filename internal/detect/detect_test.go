package detect

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// writeTree creates files (path → content) under a new temporary directory.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, content := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func TestDetectEveryMarker(t *testing.T) {
	for lang, ms := range markers {
		for _, m := range ms {
			t.Run(lang+"/"+m, func(t *testing.T) {
				root := writeTree(t, map[string]string{m: "", "src/a" + extensions[lang][0]: ""})
				res, err := Detect(context.Background(), root)
				if err != nil {
					t.Fatal(err)
				}
				if res.Primary != lang {
					t.Fatalf("primary = %q, want %q", res.Primary, lang)
				}
				want := 1
				if filepath.Ext(m) == extensions[lang][0] { // setup.py is a source file too
					want = 2
				}
				if len(res.Languages) != 1 || res.Languages[0].Markers[0] != m || res.Languages[0].SourceFiles != want {
					t.Fatalf("languages = %+v, want one %s with marker %s and %d source files", res.Languages, lang, m, want)
				}
				if len(res.Warnings) != 0 {
					t.Fatalf("unexpected warnings %+v", res.Warnings)
				}
			})
		}
	}
}

func many(prefix, ext string, n int) map[string]string {
	m := map[string]string{}
	for i := range n {
		m[fmt.Sprintf("%s/f%d%s", prefix, i, ext)] = ""
	}
	return m
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestDetectDisambiguation(t *testing.T) {
	tests := []struct {
		name      string
		files     map[string]string
		primary   string
		secondary []string
		counts    map[string]int
		tie       bool
	}{
		{
			name:      "typescript outnumbers go",
			files:     merge(map[string]string{"go.mod": "", "package.json": ""}, many("cmd", ".go", 3), many("web", ".ts", 5)),
			primary:   TypeScript,
			secondary: []string{Go},
			counts:    map[string]int{Go: 3, TypeScript: 5},
		},
		{
			name: "go repo whose node_modules holds thousands of js files",
			files: merge(map[string]string{"go.mod": "", "package.json": ""},
				many("internal/x", ".go", 4), many("node_modules/pkg/lib", ".js", 3000), many("web", ".js", 2)),
			primary:   Go,
			secondary: []string{TypeScript},
			counts:    map[string]int{Go: 4, TypeScript: 2},
		},
		{
			name: "gitignored directory is not counted",
			files: merge(map[string]string{"Cargo.toml": "", "pyproject.toml": "", ".gitignore": "# generated\ngen/\n"},
				many("src", ".rs", 3), many("gen/py", ".py", 50), many("tools", ".py", 1)),
			primary:   Rust,
			secondary: []string{Python},
			counts:    map[string]int{Rust: 3, Python: 1},
		},
		{
			name: "every skipped directory",
			files: merge(map[string]string{"go.mod": "", "setup.py": ""}, many("pkg", ".go", 2),
				many("vendor", ".py", 5), many("target", ".py", 5), many("dist", ".py", 5), many("build", ".py", 5),
				many(".venv/lib", ".py", 5), many("a/__pycache__", ".py", 5), many(".git/hooks", ".py", 5)),
			primary:   Go,
			secondary: []string{Python},
			counts:    map[string]int{Go: 2, Python: 1}, // setup.py itself
		},
		{
			name:      "tie broken by marker table order and reported",
			files:     merge(map[string]string{"go.mod": "", "requirements.txt": ""}, many("a", ".go", 2), many("b", ".py", 2)),
			primary:   Python,
			secondary: []string{Go},
			counts:    map[string]int{Go: 2, Python: 2},
			tie:       true,
		},
		{
			name:      "c and java",
			files:     merge(map[string]string{"pom.xml": "", "CMakeLists.txt": ""}, many("src", ".java", 1), many("native", ".cc", 2), many("native", ".h", 2)),
			primary:   CPP,
			secondary: []string{Java},
			counts:    map[string]int{CPP: 4, Java: 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := writeTree(t, tt.files)
			res, err := Detect(context.Background(), root)
			if err != nil {
				t.Fatal(err)
			}
			if res.Primary != tt.primary {
				t.Fatalf("primary = %q, want %q (languages %+v)", res.Primary, tt.primary, res.Languages)
			}
			var sec []string
			for _, l := range res.Languages[1:] {
				sec = append(sec, l.Name)
			}
			if fmt.Sprint(sec) != fmt.Sprint(tt.secondary) {
				t.Errorf("secondary = %v, want %v", sec, tt.secondary)
			}
			for lang, n := range tt.counts {
				if res.SourceFiles[lang] != n {
					t.Errorf("source files of %s = %d, want %d", lang, res.SourceFiles[lang], n)
				}
			}
			gotTie := false
			for _, w := range res.Warnings {
				if strings.HasPrefix(w.Message, "tie:") {
					gotTie = true
				}
			}
			if gotTie != tt.tie {
				t.Errorf("tie reported = %v, want %v (warnings %+v)", gotTie, tt.tie, res.Warnings)
			}
		})
	}
}

func TestDetectNoMarkers(t *testing.T) {
	root := writeTree(t, map[string]string{"main.py": "", "README.md": ""})
	res, err := Detect(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if res.Primary != "" || len(res.Languages) != 0 {
		t.Fatalf("primary %q languages %+v, want none", res.Primary, res.Languages)
	}
	if res.SourceFiles[Python] != 1 {
		t.Errorf("python files = %d, want 1 (counted for inferred gates)", res.SourceFiles[Python])
	}
	if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0].Message, "no language markers") {
		t.Fatalf("warnings = %+v, want one no-markers warning", res.Warnings)
	}
}

func TestDetectBadRoot(t *testing.T) {
	dir := t.TempDir()
	if _, err := Detect(context.Background(), filepath.Join(dir, "missing")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing root: err = %v, want fs.ErrNotExist", err)
	}
	file := filepath.Join(dir, "f")
	os.WriteFile(file, nil, 0o644)
	if _, err := Detect(context.Background(), file); !errors.Is(err, ErrNotDir) {
		t.Errorf("file root: err = %v, want ErrNotDir", err)
	}
	loop := filepath.Join(dir, "loop")
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	if _, err := Detect(context.Background(), loop); err == nil || !strings.Contains(err.Error(), "loop") {
		t.Errorf("symlink-loop root: err = %v, want an error naming the loop", err)
	}
}

func TestDetectSymlinks(t *testing.T) {
	root := writeTree(t, map[string]string{"pkg/a.go": "", "Cargo.toml": ""})
	// A directory symlink back to the root and a self-referencing marker.
	if err := os.Symlink(root, filepath.Join(root, "pkg", "up")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("go.mod", filepath.Join(root, "go.mod")); err != nil {
		t.Fatal(err)
	}
	res, err := Detect(context.Background(), root)
	if err != nil {
		t.Fatal(err)
	}
	if res.Primary != Rust || res.SourceFiles[Go] != 1 {
		t.Fatalf("primary %q, go files %d; want rust (go.mod is a loop) and 1 go file", res.Primary, res.SourceFiles[Go])
	}
	if len(res.Warnings) != 1 || res.Warnings[0].File != filepath.Join(root, "go.mod") {
		t.Fatalf("warnings = %+v, want one about go.mod", res.Warnings)
	}
}

// failFS fails to read one directory, as an unreadable directory would.
type failFS struct {
	fs.FS
	bad string
}

func (f failFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if name == f.bad {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return fs.ReadDir(f.FS, name)
}

func TestDetectUnreadableDir(t *testing.T) {
	fsys := failFS{FS: fstest.MapFS{
		"go.mod":        {},
		"a.go":          {},
		"secret/b.go":   {},
		"secret/c/d.go": {},
	}, bad: "secret"}
	res, err := DetectFS(context.Background(), fsys, "/proj")
	if err != nil {
		t.Fatal(err)
	}
	if res.SourceFiles[Go] != 1 {
		t.Errorf("go files = %d, want 1", res.SourceFiles[Go])
	}
	if len(res.Warnings) != 1 || res.Warnings[0].File != filepath.Join("/proj", "secret") || !strings.Contains(res.Warnings[0].Message, "permission denied") {
		t.Fatalf("warnings = %+v, want one naming /proj/secret and the permission error", res.Warnings)
	}
}

func TestDetectCanceled(t *testing.T) {
	root := writeTree(t, map[string]string{"go.mod": "", "a/b.go": ""})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Detect(ctx, root); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
}

func TestIgnore(t *testing.T) {
	tests := []struct {
		rules string
		path  string
		dir   bool
		want  bool
	}{
		{"*.log", "a/b/x.log", false, true},
		{"*.log\n!keep.log", "a/keep.log", false, false},
		{"build/", "x/build", true, true},
		{"build/", "x/build", false, false},
		{"/top.py", "top.py", false, true},
		{"/top.py", "sub/top.py", false, false},
		{"doc/*.py", "doc/a.py", false, true},
		{"doc/*.py", "x/doc/a.py", false, false},
		{"**/gen", "a/b/gen", true, true},
		{"a/**/z.py", "a/z.py", false, true},
		{"a/**/z.py", "a/b/c/z.py", false, true},
		{"a/**", "a/b/c.py", false, true},
		{"# comment\n\n", "comment", false, false},
		{`\#x.py`, "#x.py", false, true},
		{"[ab].py", "b.py", false, true},
		{"[", "[", false, false}, // malformed pattern matches nothing
	}
	for _, tt := range tests {
		st := ignoreStack{parseIgnore("", []byte(tt.rules))}
		if got := st.ignored(tt.path, tt.dir); got != tt.want {
			t.Errorf("rules %q: ignored(%q, dir=%v) = %v, want %v", tt.rules, tt.path, tt.dir, got, tt.want)
		}
	}
	// A nested .gitignore applies relative to its directory and overrides
	// the root's rules.
	st := ignoreStack{parseIgnore("", []byte("*.py")), parseIgnore("sub", []byte("!/keep.py"))}
	if st.ignored("sub/keep.py", false) {
		t.Error("sub/keep.py: nested negation not applied")
	}
	if !st.ignored("sub/deeper/keep.py", false) {
		t.Error("sub/deeper/keep.py: anchored nested rule applied below its directory")
	}
}

// BenchmarkDetect50k resolves step 1 on a generated 50,000-file tree: Go
// sources, a node_modules of JavaScript, gitignored output and assorted
// non-source files.
func BenchmarkDetect50k(b *testing.B) {
	root := b.TempDir()
	must := func(err error) {
		if err != nil {
			b.Fatal(err)
		}
	}
	must(os.WriteFile(filepath.Join(root, "go.mod"), []byte("module x\n"), 0o644))
	must(os.WriteFile(filepath.Join(root, "package.json"), []byte("{}"), 0o644))
	must(os.WriteFile(filepath.Join(root, ".gitignore"), []byte("/out/\n*.tmp\n"), 0o644))
	kinds := []struct {
		dir, ext string
		n        int
	}{
		{"internal", ".go", 15000},
		{"docs", ".md", 5000},
		{"web/src", ".ts", 5000},
		{"node_modules", ".js", 15000},
		{"out", ".go", 5000},
		{"assets", ".tmp", 5000},
	}
	total := 3
	for _, k := range kinds {
		for i := 0; i < k.n; i++ {
			dir := filepath.Join(root, k.dir, fmt.Sprintf("d%03d", i/100))
			if i%100 == 0 {
				must(os.MkdirAll(dir, 0o755))
			}
			must(os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%d%s", i, k.ext)), nil, 0o644))
			total++
		}
	}
	b.ReportMetric(float64(total), "files")
	b.ResetTimer()
	for b.Loop() {
		res, err := Detect(context.Background(), root)
		if err != nil {
			b.Fatal(err)
		}
		if res.Primary != Go || res.SourceFiles[Go] != 15000 {
			b.Fatalf("primary %q with %d go files", res.Primary, res.SourceFiles[Go])
		}
	}
}
