package manifest

import (
	"embed"
	"fmt"
)

//go:embed builtin/*.md
var builtinFS embed.FS

// BuiltinPath is how a built-in manifest is named in output and warnings.
func BuiltinPath(lang string) string { return "builtin:" + lang + ".md" }

// BuiltinSource returns the text of the built-in manifest for a language
// (a detect language name), and false when there is none.
func BuiltinSource(lang string) ([]byte, bool) {
	data, err := builtinFS.ReadFile("builtin/" + lang + ".md")
	if err != nil {
		return nil, false
	}
	return data, true
}

// Builtin parses the built-in manifest for a language.
func Builtin(lang string) (*Manifest, error) {
	data, ok := BuiltinSource(lang)
	if !ok {
		return nil, fmt.Errorf("no built-in manifest for language %q", lang)
	}
	return Parse(BuiltinPath(lang), data)
}
