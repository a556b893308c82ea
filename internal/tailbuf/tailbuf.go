// Package tailbuf keeps the end of a stream: the last bytes of a command's
// output, for an error message or a gate result.
package tailbuf

import (
	"sync"
	"unicode/utf8"
)

// Buffer keeps the last Max bytes written to it. It is safe for concurrent
// writers (a command's stdout and stderr).
type Buffer struct {
	mu  sync.Mutex
	max int
	buf []byte
}

// New returns a Buffer that keeps the last max bytes.
func New(max int) *Buffer { return &Buffer{max: max} }

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	// Trimming only past twice the limit keeps writes amortised O(len(p)).
	if len(b.buf) > 2*b.max {
		b.buf = append(b.buf[:0], b.buf[len(b.buf)-b.max:]...)
	}
	return len(p), nil
}

// String returns the kept tail, starting at a rune boundary (trimming in
// Write may have cut a rune in two).
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return runeStart(Last(string(b.buf), b.max))
}

// Last returns the last n bytes of s, starting at a rune boundary.
func Last(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return runeStart(s[len(s)-n:])
}

func runeStart(s string) string {
	for len(s) > 0 && !utf8.RuneStart(s[0]) {
		s = s[1:]
	}
	return s
}
