package tailbuf

import (
	"strings"
	"testing"
)

func TestBufferKeepsTheLastBytesAtARuneBoundary(t *testing.T) {
	b := New(5)
	for _, s := range []string{"hello ", "wörld", strings.Repeat("x", 20), "é-end"} {
		b.Write([]byte(s))
	}
	// The last 5 bytes start inside é: the tail starts after it.
	if got := b.String(); got != "-end" {
		t.Fatalf("tail = %q, want %q", got, "-end")
	}
	b = New(2)
	b.Write([]byte("éx")) // é is two bytes: the last 2 start inside it
	if got := b.String(); got != "x" {
		t.Fatalf("tail = %q, want %q", got, "x")
	}
	if got := Last("short", 10); got != "short" {
		t.Fatalf("Last of a short string = %q", got)
	}
}
