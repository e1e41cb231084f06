package defaults

import "testing"

func TestSet(t *testing.T) {
	a, b, s := 0, 3, ""
	Set(&a, 7)
	Set(&b, 7)
	Set(&s, "x")
	if a != 7 || b != 3 || s != "x" {
		t.Fatalf("got %d %d %q, want 7 3 \"x\"", a, b, s)
	}
}
