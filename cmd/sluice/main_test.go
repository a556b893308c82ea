package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

func TestMain(m *testing.M) {
	os.Exit(testscript.RunMain(m, map[string]func() int{
		"sluice": run,
	}))
}

// TestScripts runs the end-to-end CLI scripts in testdata/script.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			env.Setenv("GIT_AUTHOR_NAME", "sluice test")
			env.Setenv("GIT_AUTHOR_EMAIL", "test@sluice.invalid")
			env.Setenv("GIT_COMMITTER_NAME", "sluice test")
			env.Setenv("GIT_COMMITTER_EMAIL", "test@sluice.invalid")
			env.Setenv("GIT_CONFIG_NOSYSTEM", "1")
			return nil
		},
	})
}
