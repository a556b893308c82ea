package ui

import (
	_ "embed"
)

//go:embed jsonentry.schema.json
var jsonEntrySchema []byte

// JSONEntrySchema returns the JSON Schema (draft 2020-12) of the lines
// `--json` prints: one JSONEntry per line.
func JSONEntrySchema() []byte {
	return append([]byte(nil), jsonEntrySchema...)
}
