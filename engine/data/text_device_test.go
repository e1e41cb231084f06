package data

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"pfl/cuda"
)

// writeRoles writes FedTP's Shakespeare layout: dir/<role>/{train,test}.txt.
func writeRoles(t *testing.T, dir string, roles map[string][2]string) {
	t.Helper()
	for role, txt := range roles {
		if err := os.MkdirAll(filepath.Join(dir, role), 0o755); err != nil {
			t.Fatal(err)
		}
		for i, f := range []string{"train.txt", "test.txt"} {
			if err := os.WriteFile(filepath.Join(dir, role, f), []byte(txt[i]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestFederateAndBatchText(t *testing.T) {
	dir := t.TempDir()
	writeRoles(t, dir, map[string][2]string{
		"A": {"abcdefgh", "xyz12"},
		"B": {"hello world", "0123456"},
		"C": {"ab", "too short"}, // no training sequence of 4+1: left out
		"D": {"ROMEO: hi", "JULIET"},
	})
	txt, err := OpenText("shakespeare:"+dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	tf, err := txt.Federate(0, 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(tf.IDs, []string{"A", "B", "D"}) {
		t.Fatalf("roles %v, want A B D", tf.IDs)
	}
	// A: 8 characters → 4 windows of 5; B: 7; D: 5
	if got := []int{len(tf.Fed.Part.Train[0]), len(tf.Fed.Part.Train[1]), len(tf.Fed.Part.Train[2])}; !slices.Equal(got, []int{4, 7, 5}) {
		t.Fatalf("train sequences per client %v", got)
	}
	plan, err := NewPlan([]int{1, 2}, [][]int{tf.Fed.Part.Train[1], tf.Fed.Part.Train[2]}, PlanConfig{Epochs: 1, Batch: 8, Round: -1})
	if err != nil {
		t.Fatal(err)
	}
	dp, err := plan.Upload(cuda.CPU, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer dp.Close()
	dt, err := UploadText(tf.Train, cuda.CPU)
	if err != nil {
		t.Fatal(err)
	}
	defer dt.Close()
	s := cuda.NewScope()
	defer s.Close()
	b := dt.Batch(s, dp, 0)
	if got := b.X.Shape(); !slices.Equal(got, []int64{2, 8, 4}) || !slices.Equal(b.Y.Shape(), got) {
		t.Fatalf("X %v, Y %v", got, b.Y.Shape())
	}
	x, _ := b.X.Int64s()
	y, _ := b.Y.Int64s()
	mask, _ := b.Mask.Float64s()
	decode := func(v []int64) string {
		var sb strings.Builder
		for _, c := range v {
			sb.WriteByte(Printable[c])
		}
		return sb.String()
	}
	// client B's first sequence is "hello" (in order: the plan does not shuffle)
	if decode(x[0:4]) != "hell" || decode(y[0:4]) != "ello" {
		t.Errorf("client B's first sequence reads %q → %q", decode(x[0:4]), decode(y[0:4]))
	}
	if decode(x[32:36]) != "ROME" || decode(y[32:36]) != "OMEO" {
		t.Errorf("client D's first sequence reads %q → %q", decode(x[32:36]), decode(y[32:36]))
	}
	if want := []float64{1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 0}; !slices.Equal(mask, want) {
		t.Errorf("mask %v, want %v", mask, want)
	}
}

func TestFederateTextErrors(t *testing.T) {
	dir := t.TempDir()
	writeRoles(t, dir, map[string][2]string{"A": {"abcdefgh", "xyz12"}, "B": {"hello world", "0123456"}})
	txt, err := OpenText("shakespeare:"+dir, 4)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := txt.Federate(3, 0, 1); err == nil || !strings.Contains(err.Error(), "only 2 roles") {
		t.Errorf("3 of 2 roles: %v", err)
	}
	tf, err := txt.Federate(1, 0, 1)
	if err != nil || len(tf.IDs) != 1 {
		t.Errorf("1 of 2 roles: %v, %v", tf, err)
	}
	for _, spec := range []string{"shakespeare:" + filepath.Join(dir, "missing"), "shakespeare:", "poems:" + dir} {
		if _, err := OpenText(spec, 4); err == nil {
			t.Errorf("%s accepted", spec)
		}
	}
}
