package cuda

import (
	"errors"
	"strings"
	"testing"
)

func TestMissingLibraryNamesTheBuildCommand(t *testing.T) {
	t.Setenv(LibraryEnv, "/nonexistent/libpfltorch.so")
	_, err := load() // load itself, not Load: the process's library stays loaded
	if !errors.Is(err, ErrNoLibrary) {
		t.Fatalf("error %v, want ErrNoLibrary", err)
	}
	for _, want := range []string{"/nonexistent/libpfltorch.so", "scripts/build.sh", LibraryEnv} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
}

func TestCandidatesIncludeBuildFolders(t *testing.T) {
	c := candidates()
	found := false
	for _, p := range c {
		if strings.HasSuffix(p, "/build/"+LibraryName) {
			found = true
		}
	}
	if !found {
		t.Fatalf("no build/ candidate in %v", c)
	}
}

func TestBroadcast(t *testing.T) {
	cases := []struct {
		a, b, want []int64
		ok         bool
	}{
		{[]int64{2, 3}, []int64{3}, []int64{2, 3}, true},
		{[]int64{2, 1}, []int64{1, 3}, []int64{2, 3}, true},
		{[]int64{4, 1, 5}, []int64{3, 1}, []int64{4, 3, 5}, true},
		{[]int64{}, []int64{2}, []int64{2}, true},
		{[]int64{2, 3}, []int64{2}, nil, false},
	}
	for _, c := range cases {
		got, ok := broadcast(c.a, c.b)
		if ok != c.ok || (ok && !equalShape(got, c.want)) {
			t.Errorf("broadcast(%v, %v) = %v, %v; want %v, %v", c.a, c.b, got, ok, c.want, c.ok)
		}
	}
}

func TestInferShape(t *testing.T) {
	if got, ok := inferShape([]int64{3, -1}, 12); !ok || !equalShape(got, []int64{3, 4}) {
		t.Errorf("inferShape([3 -1], 12) = %v, %v", got, ok)
	}
	for _, bad := range [][]int64{{5, -1}, {-1, -1}, {2, 2}} {
		if _, ok := inferShape(bad, 12); ok {
			t.Errorf("inferShape(%v, 12) accepted", bad)
		}
	}
}
