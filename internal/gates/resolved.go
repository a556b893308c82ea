package gates

import (
	"github.com/sluice-run/sluice/internal/detect"
	"github.com/sluice-run/sluice/internal/manifest"
	"github.com/sluice-run/sluice/internal/resolve"
)

// Commands turns resolved quality gates into commands, in the manifest's
// gate order (format, lint, typecheck, test, standards), leaving out unset
// gates. {files} commands receive the source files of the project's primary
// language (or, without one, of the language with the most source files).
func Commands(res *resolve.Result) []Command {
	lang := res.Primary
	if lang == "" {
		best := 0
		for _, l := range detect.LanguageNames() {
			if n := res.SourceFiles[l]; n > best {
				lang, best = l, n
			}
		}
	}
	var exts []string
	if lang != "" {
		exts = detect.SourceExtensions(lang)
	}
	var cmds []Command
	for _, name := range manifest.GateNames() {
		g, ok := res.Gates[name]
		if !ok || g.Command == "" {
			continue
		}
		c := Command{Name: name, Command: g.Command}
		if c.PerFile() {
			c.Extensions = exts
		}
		cmds = append(cmds, c)
	}
	return cmds
}
