package data

import (
	"strings"
	"testing"
)

func TestPadTo(t *testing.T) {
	x := &Images{Name: "t", N: 2, C: 1, H: 2, W: 3, Classes: 2, Labels: []int64{0, 1},
		Pixels: []uint8{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}}
	y, err := PadTo(x, 5)
	if err != nil {
		t.Fatal(err)
	}
	// 2×3 in 5×5: one row above (two below), one column left (one right)
	want := []uint8{
		0, 0, 0, 0, 0, 0, 1, 2, 3, 0, 0, 4, 5, 6, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 7, 8, 9, 0, 0, 10, 11, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	}
	if y.H != 5 || y.W != 5 || len(y.Pixels) != len(want) {
		t.Fatalf("%d×%d, %d pixels", y.H, y.W, len(y.Pixels))
	}
	for i := range want {
		if y.Pixels[i] != want[i] {
			t.Fatalf("pixel %d is %d, want %d", i, y.Pixels[i], want[i])
		}
	}
	if _, err := PadTo(x, 2); err == nil || !strings.Contains(err.Error(), "larger") {
		t.Fatalf("padding to a smaller side: %v", err)
	}
}
