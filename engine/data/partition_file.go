package data

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
)

// IndexFile is the JSON form of a partition drawn elsewhere (method file): for every
// client, the indices of its training and test samples. Under the fedtp convention Train
// indexes the dataset's official training set and Test its official test set, both in
// stored order (for CIFAR: data_batch_1..5 then test_batch); under the fedperfix
// convention both index the pool of the training set followed by the test set. Samples
// that no client lists are unused (a validation split held out, say).
type IndexFile struct {
	Train [][]int `json:"train"`
	Test  [][]int `json:"test"`
}

// ReadIndexFile reads an IndexFile, refusing unknown keys and anything after the object.
func ReadIndexFile(path string) (IndexFile, error) {
	var x IndexFile
	fh, err := os.Open(path)
	if err != nil {
		return x, fmt.Errorf("data: partition file: %w", err)
	}
	defer fh.Close()
	dec := json.NewDecoder(fh)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&x); err != nil {
		return x, fmt.Errorf("data: partition file %s: %w", path, err)
	}
	// one object and nothing after it: a second object or trailing text is a file cut
	// and pasted together, not one partition
	if _, err := dec.Token(); err != io.EOF {
		return x, fmt.Errorf("data: partition file %s: more after its JSON object (at byte %d); want one object {\"train\": [...], \"test\": [...]}", path, dec.InputOffset())
	}
	return x, nil
}

// partitionFile sets f.Part from cfg.File, checking that it has cfg.Clients clients, each
// with at least one training and one test sample, every index in range, no sample listed
// twice in the training lists or twice in the test lists, and (fedperfix, one pool) no
// sample both trained and tested on.
func (f *Federated) partitionFile(cfg PartitionConfig) error {
	if cfg.File == "" {
		return fmt.Errorf("data: method file needs a partition file")
	}
	x, err := ReadIndexFile(cfg.File)
	if err != nil {
		return err
	}
	switch cfg.Convention {
	case ConventionFedTP:
		if f.Test.N == 0 {
			return fmt.Errorf("data: %s has no official test set; use the fedperfix convention", f.Train.Name)
		}
	case ConventionFedPerfix:
		f.Train = Concat(f.Train, f.Test)
		f.Test = f.Train
	default:
		return fmt.Errorf("data: unknown convention %q (fedtp or fedperfix)", cfg.Convention)
	}
	if len(x.Train) != cfg.Clients || len(x.Test) != cfg.Clients {
		return fmt.Errorf("data: partition file %s: %d training and %d test lists, want %d clients each", cfg.File, len(x.Train), len(x.Test), cfg.Clients)
	}
	check := func(what string, lists [][]int, n int, seen map[int]string) error {
		for c, l := range lists {
			if len(l) == 0 {
				return fmt.Errorf("data: partition file %s: client %d has no %s samples", cfg.File, c, what)
			}
			for _, i := range l {
				if i < 0 || i >= n {
					return fmt.Errorf("data: partition file %s: client %d's %s index %d outside [0, %d)", cfg.File, c, what, i, n)
				}
				if prev, dup := seen[i]; dup {
					return fmt.Errorf("data: partition file %s: sample %d is in client %d's %s list and in %s", cfg.File, i, c, what, prev)
				}
				seen[i] = fmt.Sprintf("client %d's %s list", c, what)
			}
		}
		return nil
	}
	seenTrain := map[int]string{}
	if err := check("training", x.Train, f.Train.N, seenTrain); err != nil {
		return err
	}
	seenTest := map[int]string{}
	if cfg.Convention == ConventionFedPerfix {
		seenTest = seenTrain // one pool: a sample is trained or tested on, not both
	}
	if err := check("test", x.Test, f.Test.N, seenTest); err != nil {
		return err
	}
	f.Part.Train, f.Part.Test = x.Train, x.Test
	return nil
}
