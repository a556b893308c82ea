package calc

import "testing"

func TestAdd(t *testing.T) {
	if 1+1 != 2 {
		t.Fatal("math is broken")
	}
}

func TestSub(t *testing.T) {
	t.Errorf("Sub(3, 1) = %d, want %d", 1, 2)
}

func TestTable(t *testing.T) {
	for _, name := range []string{"small numbers", "large numbers"} {
		t.Run(name, func(t *testing.T) {
			if name == "large numbers" {
				t.Error("overflow")
			}
		})
	}
}
