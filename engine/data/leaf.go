package data

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"unicode/utf8"
)

// leafFile is LEAF's JSON layout (Shakespeare: x are fixed-length strings, y the next
// character).
type leafFile struct {
	Users      []string `json:"users"`
	NumSamples []int    `json:"num_samples"`
	UserData   map[string]struct {
		X []string `json:"x"`
		Y []string `json:"y"`
	} `json:"user_data"`
}

// printableIndex maps a byte to its index in Printable, or -1.
var printableIndex = func() (t [256]int16) {
	for i := range t {
		t[i] = -1
	}
	for i := 0; i < len(Printable); i++ {
		t[Printable[i]] = int16(i)
	}
	return t
}()

// encodePrintable appends the Printable indices of s's characters to dst; it fails on
// the first character outside Printable.
func encodePrintable(dst []int64, s string) ([]int64, error) {
	for _, r := range s {
		if r >= utf8.RuneSelf || printableIndex[r] < 0 {
			return dst, fmt.Errorf("character %q is outside the Printable vocabulary", r)
		}
		dst = append(dst, int64(printableIndex[r]))
	}
	return dst, nil
}

// readLEAF reads one LEAF JSON file and encodes each user's samples as sequences of
// x followed by y; *seqLen is the common length of every x (0 until the first is seen).
func readLEAF(path string, seqLen *int) (users []string, seqs map[string]Sequences, err error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("data: %w", err)
	}
	var f leafFile
	if err := json.Unmarshal(b, &f); err != nil {
		return nil, nil, fmt.Errorf("data: %s: not LEAF JSON: %w", path, err)
	}
	if len(f.NumSamples) != len(f.Users) {
		return nil, nil, fmt.Errorf("data: %s: %d num_samples for %d users", path, len(f.NumSamples), len(f.Users))
	}
	seqs = map[string]Sequences{}
	for i, u := range f.Users {
		d, ok := f.UserData[u]
		if !ok {
			return nil, nil, fmt.Errorf("data: %s: user %s has no user_data", path, clip(u))
		}
		if _, dup := seqs[u]; dup {
			return nil, nil, fmt.Errorf("data: %s: user %s listed twice", path, clip(u))
		}
		if n := f.NumSamples[i]; n != len(d.X) || n != len(d.Y) {
			return nil, nil, fmt.Errorf("data: %s: user %s: num_samples %d but %d x and %d y", path, clip(u), n, len(d.X), len(d.Y))
		}
		var toks []int64
		for j, x := range d.X {
			y := d.Y[j]
			if toks, err = encodePrintable(toks, x+y); err != nil {
				return nil, nil, fmt.Errorf("data: %s: user %s: sample %d: %w", path, clip(u), j, err)
			}
			if *seqLen == 0 {
				*seqLen = len(x) // x and y are ASCII now
			}
			if len(x) == 0 || len(x) != *seqLen || len(y) != 1 {
				return nil, nil, fmt.Errorf("data: %s: user %s: sample %d has a %d-character x and a %d-character y, want %d and 1", path, clip(u), j, len(x), len(y), *seqLen)
			}
		}
		seqs[u] = Sequences{Len: *seqLen, Tokens: toks}
	}
	return f.Users, seqs, nil
}

// LoadLEAF loads LEAF's Shakespeare from its train and test JSON files: one client per
// user present in both files, in the order of the train file's "users". Each sample
// becomes one sequence of Len+1 Printable tokens, x followed by y, so Len is the
// length of x (the same for every sample of both files).
func LoadLEAF(trainPath, testPath string) (*Text, error) {
	seqLen := 0
	users, train, err := readLEAF(trainPath, &seqLen)
	if err != nil {
		return nil, err
	}
	_, test, err := readLEAF(testPath, &seqLen)
	if err != nil {
		return nil, err
	}
	if seqLen == 0 {
		return nil, fmt.Errorf("data: %s and %s hold no samples", trainPath, testPath)
	}
	t := &Text{Name: "shakespeare", Vocab: Printable}
	for _, u := range users {
		if te, ok := test[u]; ok {
			tr := train[u]
			tr.Len, te.Len = seqLen, seqLen // a user with no samples still has the common Len
			t.Clients = append(t.Clients, TextClient{ID: u, Train: tr, Test: te})
		}
	}
	if len(t.Clients) == 0 {
		return nil, fmt.Errorf("data: %s and %s have no user in common", trainPath, testPath)
	}
	return t, nil
}

// LoadPlainText loads a plain-text character dataset laid out as FedTP's: dir holds one
// sub-directory per client (taken in sorted name order) with train.txt and test.txt.
// Like FedTP's CharacterDataset, every window of seqLen+1 consecutive characters
// (stride 1) is a sequence. Clients whose train or test text is shorter than seqLen+1
// characters (so that one part would have no sequence) are dropped silently; FedTP
// drops those with too short a test text. The Name is dir's base name.
func LoadPlainText(dir string, seqLen int) (*Text, error) {
	if seqLen <= 0 {
		return nil, fmt.Errorf("data: %s: sequence length %d, want > 0", dir, seqLen)
	}
	ents, err := os.ReadDir(dir) // sorted by name
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	t := &Text{Name: filepath.Base(dir), Vocab: Printable}
	for _, e := range ents {
		if !e.IsDir() {
			continue
		}
		c := TextClient{ID: e.Name()}
		keep := true
		for _, part := range []struct {
			file string
			seq  *Sequences
		}{{"train.txt", &c.Train}, {"test.txt", &c.Test}} {
			p := filepath.Join(dir, e.Name(), part.file)
			b, err := os.ReadFile(p)
			if err != nil {
				return nil, fmt.Errorf("data: %w", err)
			}
			toks, err := encodePrintable(nil, string(b))
			if err != nil {
				return nil, fmt.Errorf("data: %s: %w", p, err)
			}
			*part.seq = Sequences{Len: seqLen}
			if len(toks) < seqLen+1 {
				keep = false
				continue
			}
			n := len(toks) - seqLen
			part.seq.Tokens = make([]int64, 0, n*(seqLen+1))
			for i := 0; i < n; i++ {
				part.seq.Tokens = append(part.seq.Tokens, toks[i:i+seqLen+1]...)
			}
		}
		if keep {
			t.Clients = append(t.Clients, c)
		}
	}
	if len(t.Clients) == 0 {
		return nil, fmt.Errorf("data: %s: no client directory with train.txt and test.txt of at least %d characters", dir, seqLen+1)
	}
	return t, nil
}
