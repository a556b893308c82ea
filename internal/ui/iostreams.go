// Package ui is the one place user-facing output goes through: the streams a
// command writes to, whether they are terminals, and how lines are printed.
package ui

import (
	"bytes"
	"io"
	"os"
)

// IOStreams are the streams a command reads and writes. Commands never touch
// os.Stdout directly, so every command is testable with buffers.
type IOStreams struct {
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer

	// OutIsTTY reports whether Out is an interactive terminal; it decides
	// between the live view and plain lines.
	OutIsTTY bool
	// InIsTTY reports whether a person can answer a question on In.
	InIsTTY bool
}

// System returns the process's own streams.
func System() *IOStreams {
	return &IOStreams{
		In:       os.Stdin,
		Out:      os.Stdout,
		ErrOut:   os.Stderr,
		OutIsTTY: isTerminal(os.Stdout),
		InIsTTY:  isTerminal(os.Stdin),
	}
}

// Test returns streams backed by buffers: stdin, stdout, stderr.
func Test() (*IOStreams, *bytes.Buffer, *bytes.Buffer, *bytes.Buffer) {
	in, out, errOut := &bytes.Buffer{}, &bytes.Buffer{}, &bytes.Buffer{}
	return &IOStreams{In: in, Out: out, ErrOut: errOut}, in, out, errOut
}

func isTerminal(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil {
		return false
	}
	return fi.Mode()&os.ModeCharDevice != 0
}
