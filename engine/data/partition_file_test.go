package data

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func writeIndexFile(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "partition.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestPartitionFileUsesTheListedIndices: method file trains and tests each client on
// exactly the samples its lists name, under both conventions.
func TestPartitionFileUsesTheListedIndices(t *testing.T) {
	sp := &Split{Train: labelled("train", 40, 10), Test: labelled("test", 20, 10)}
	p := writeIndexFile(t, `{"train": [[3, 1, 7], [0, 39]], "test": [[19], [2, 4]]}`)
	f, err := sp.Partition(PartitionConfig{Method: MethodFile, Clients: 2, File: p})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.Part.Train[0], []int{3, 1, 7}) || !slices.Equal(f.Part.Train[1], []int{0, 39}) ||
		!slices.Equal(f.Part.Test[1], []int{2, 4}) || f.Train.N != 40 || f.Test.N != 20 {
		t.Fatalf("fedtp: got train %v test %v over %d/%d samples", f.Part.Train, f.Part.Test, f.Train.N, f.Test.N)
	}
	// the fedperfix convention indexes the pool: training set then test set
	p = writeIndexFile(t, `{"train": [[0, 45], [59]], "test": [[1], [40, 2]]}`)
	f, err = sp.Partition(PartitionConfig{Method: MethodFile, Convention: ConventionFedPerfix, Clients: 2, File: p})
	if err != nil {
		t.Fatal(err)
	}
	if f.Train != f.Test || f.Train.N != 60 || f.Train.Labels[45] != sp.Test.Labels[5] || !slices.Equal(f.Part.Test[1], []int{40, 2}) {
		t.Fatalf("fedperfix: pool of %d, train %v test %v", f.Train.N, f.Part.Train, f.Part.Test)
	}
}

// TestPartitionFileRefusesBadLists: each malformed file is refused with the problem named.
func TestPartitionFileRefusesBadLists(t *testing.T) {
	sp := &Split{Train: labelled("train", 40, 10), Test: labelled("test", 20, 10)}
	cases := []struct {
		body, convention, want string
	}{
		{`{"train": [[1]], "test": [[1]]}`, "", "want 2 clients"},
		{`{"train": [[1], []], "test": [[1], [2]]}`, "", "client 1 has no training samples"},
		{`{"train": [[1], [40]], "test": [[1], [2]]}`, "", "index 40 outside [0, 40)"},
		{`{"train": [[1], [2]], "test": [[1], [-1]]}`, "", "index -1 outside [0, 20)"},
		{`{"train": [[1, 5], [5]], "test": [[1], [2]]}`, "", "sample 5 is in client 1's training list and in client 0's training list"},
		{`{"train": [[1], [2]], "test": [[3], [3]]}`, "", "sample 3 is in client 1's test list"},
		{`{"train": [[1], [2]], "test": [[3], [2]]}`, "fedperfix", "sample 2 is in client 1's test list and in client 1's training list"},
		{`{"train": [[1], [2]], "test": [[3], [4]], "val": []}`, "", `unknown field "val"`},
		{`not json`, "", "invalid character"},
		{`{"train": [[1], [2]], "test": [[3], [4]]} trailing`, "", "more after its JSON object"},
		{`{"train": [[1], [2]], "test": [[3], [4]]}}`, "", "more after its JSON object"},
		{`{"train": [[1], [2]], "test": [[3], [4]]}{"train": [[5], [6]], "test": [[7], [8]]}`, "", "more after its JSON object"},
	}
	for _, c := range cases {
		p := writeIndexFile(t, c.body)
		_, err := sp.Partition(PartitionConfig{Method: MethodFile, Convention: Convention(c.convention), Clients: 2, File: p})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.body, err, c.want)
		}
	}
	if _, err := sp.Partition(PartitionConfig{Method: MethodFile, Clients: 2}); err == nil || !strings.Contains(err.Error(), "needs a partition file") {
		t.Errorf("no file: got %v", err)
	}
}
