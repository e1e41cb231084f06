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

func TestValue(t *testing.T) {
	seven, half := int64(7), 0.5
	for _, c := range []struct {
		name      string
		got, want any
	}{
		{"set int64", Value(&seven), int64(7)},
		{"unset int64", Value[int64](nil), int64(0)},
		{"set float64", Value(&half), 0.5},
		{"unset float64", Value[float64](nil), 0.0},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v, want %v", c.name, c.got, c.want)
		}
	}
}
