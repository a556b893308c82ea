package panicky

import "testing"

func TestFine(t *testing.T) {}

func TestPanics(t *testing.T) {
	var m map[string]int
	m["x"] = 1
}
