// Package data loads pfl's datasets, partitions them over clients the ways the three
// papers do (IID, per-class Dirichlet, pathological k classes, two-stage Pachinko,
// per-domain Dirichlet, coarse-class groups, noise-based feature imbalance, novel-client
// hold-out), writes partition manifests and label heatmaps, and serves client-stacked
// batches from device-resident uint8 data.
//
// Every loader checks magic numbers and sizes: a truncated or corrupt file is an error
// that names the file and what is wrong, and so is a file of no images, a label out of
// range, or a test part whose images differ in shape from the train part's (checked
// when the dataset is opened). Sizes a file declares are checked against its length
// before anything that large is allocated.
package data

import (
	"fmt"
	"slices"
	"strings"
)

// Images is a labelled image set as uint8 pixels, N images of C×H×W each, row-major
// (channel, row, column within an image).
type Images struct {
	Name       string
	Source     string // the file (or files, archive members) it was read from; "" when generated
	N, C, H, W int
	Pixels     []uint8 // len N·C·H·W
	Labels     []int64 // len N, in [0, Classes)
	Classes    int
	ClassNames []string // optional, len Classes

	// Coarse labels (CIFAR-100's 20 superclasses, Kermany's normal and pneumonia), nil
	// when the set has none.
	Coarse        []int64
	CoarseClasses int

	// Domains (Office-Home's Art, Clipart, ...): a domain index per image, nil when none.
	Domains     []int64
	DomainNames []string
}

// Split is a dataset's official train and test parts.
type Split struct {
	Train, Test *Images
}

// where names x in messages: its Name, and its Source when it has one.
func (x *Images) where() string {
	if x.Source == "" {
		return x.Name
	}
	return x.Name + " (" + x.Source + ")"
}

// shape is x's image geometry as C×H×W.
func (x *Images) shape() string { return fmt.Sprintf("%d×%d×%d", x.C, x.H, x.W) }

// Validate checks the sizes and label ranges of x.
func (x *Images) Validate() error {
	switch {
	case x.N < 0 || x.C <= 0 || x.H <= 0 || x.W <= 0:
		return fmt.Errorf("data: %s: bad geometry %d×%d×%d×%d", x.where(), x.N, x.C, x.H, x.W)
	case len(x.Pixels) != x.N*x.C*x.H*x.W:
		return fmt.Errorf("data: %s: %d pixel bytes for %d images of %d×%d×%d", x.where(), len(x.Pixels), x.N, x.C, x.H, x.W)
	case len(x.Labels) != x.N:
		return fmt.Errorf("data: %s: %d labels for %d images", x.where(), len(x.Labels), x.N)
	case x.Classes <= 0:
		return fmt.Errorf("data: %s: %d classes", x.where(), x.Classes)
	case x.ClassNames != nil && len(x.ClassNames) != x.Classes:
		return fmt.Errorf("data: %s: %d class names for %d classes", x.where(), len(x.ClassNames), x.Classes)
	case x.Coarse != nil && (len(x.Coarse) != x.N || x.CoarseClasses <= 0):
		return fmt.Errorf("data: %s: %d coarse labels (%d classes) for %d images", x.where(), len(x.Coarse), x.CoarseClasses, x.N)
	case x.Domains != nil && (len(x.Domains) != x.N || len(x.DomainNames) == 0):
		return fmt.Errorf("data: %s: %d domain indices (%d domains) for %d images", x.where(), len(x.Domains), len(x.DomainNames), x.N)
	}
	for i, l := range x.Labels {
		if l < 0 || l >= int64(x.Classes) {
			return fmt.Errorf("data: %s: image %d has label %d, outside [0, %d)", x.where(), i, l, x.Classes)
		}
	}
	for i, l := range x.Coarse {
		if l < 0 || l >= int64(x.CoarseClasses) {
			return fmt.Errorf("data: %s: image %d has coarse label %d, outside [0, %d)", x.where(), i, l, x.CoarseClasses)
		}
	}
	for i, d := range x.Domains {
		if d < 0 || d >= int64(len(x.DomainNames)) {
			return fmt.Errorf("data: %s: image %d has domain %d, outside [0, %d)", x.where(), i, d, len(x.DomainNames))
		}
	}
	return nil
}

// Validate checks both parts of sp and that they agree: the train part holds images,
// and the test part (which may be empty: Office-Home has no official one) has the train
// part's image geometry, classes, coarse classes and domains. Every loader checks this
// when it opens a dataset, so a mismatch between the files of its two parts is an error
// naming both files then, not a shape error during training.
func (sp *Split) Validate() error {
	tr, te := sp.Train, sp.Test
	if tr == nil || te == nil {
		return fmt.Errorf("data: a split needs a train and a test part")
	}
	for _, x := range []*Images{tr, te} {
		if err := x.Validate(); err != nil {
			return err
		}
	}
	if tr.N == 0 {
		return fmt.Errorf("data: %s holds no images", tr.where())
	}
	differ := func(what, a, b string) error {
		return fmt.Errorf("data: the train and test parts differ in %s: %s has %s, %s has %s", what, tr.where(), a, te.where(), b)
	}
	switch {
	case tr.C != te.C || tr.H != te.H || tr.W != te.W:
		return differ("image shape (C×H×W)", tr.shape(), te.shape())
	case tr.Classes != te.Classes:
		return differ("class count", fmt.Sprint(tr.Classes, " classes"), fmt.Sprint(te.Classes, " classes"))
	case tr.ClassNames != nil && te.ClassNames != nil && !slices.Equal(tr.ClassNames, te.ClassNames):
		i := 0
		for tr.ClassNames[i] == te.ClassNames[i] {
			i++
		}
		return differ("class names", fmt.Sprintf("class %d %s", i, clip(tr.ClassNames[i])), clip(te.ClassNames[i]))
	case (tr.Coarse == nil) != (te.Coarse == nil) || tr.CoarseClasses != te.CoarseClasses:
		return differ("coarse labels", fmt.Sprint(tr.CoarseClasses, " coarse classes"), fmt.Sprint(te.CoarseClasses, " coarse classes"))
	case (tr.Domains == nil) != (te.Domains == nil) || !slices.Equal(tr.DomainNames, te.DomainNames):
		return differ("domains", fmt.Sprint(len(tr.DomainNames), " domains"), fmt.Sprint(len(te.DomainNames), " domains"))
	}
	return nil
}

// newSplit returns the split of train and test after checking it (Split.Validate).
func newSplit(train, test *Images) (*Split, error) {
	sp := &Split{Train: train, Test: test}
	if err := sp.Validate(); err != nil {
		return nil, err
	}
	return sp, nil
}

// clip quotes s for a message, cut to at most 40 bytes: names and values read from a
// file can be arbitrarily long.
func clip(s string) string {
	const n = 40
	if len(s) <= n {
		return fmt.Sprintf("%q", s)
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:n], len(s))
}

// dimsString formats dims for a message: all of them when there are at most 6, else the
// first 6 and their count, since a header can declare hundreds.
func dimsString(dims []int) string {
	const n = 6
	if len(dims) <= n {
		return fmt.Sprint(dims)
	}
	return strings.TrimSuffix(fmt.Sprint(dims[:n]), "]") + fmt.Sprintf(" …] (%d dimensions)", len(dims))
}

// Text is a character-level dataset with one client per speaking role (LEAF Shakespeare).
type Text struct {
	Name    string
	Vocab   string // the characters; a token is an index into Vocab
	Clients []TextClient
}

// TextClient is one role's sequences.
type TextClient struct {
	ID          string
	Train, Test Sequences
}

// Sequences are n sequences of Len+1 tokens each, flat: the model reads tokens [0, Len)
// of a sequence and predicts tokens [1, Len+1) (each position's next character).
type Sequences struct {
	Len    int
	Tokens []int64 // len n·(Len+1)
}

// N is the number of sequences.
func (s Sequences) N() int {
	if s.Len <= 0 {
		return 0
	}
	return len(s.Tokens) / (s.Len + 1)
}

// Printable is Python's string.printable, the 100-character vocabulary of FedTP's
// Shakespeare models: digits, letters, punctuation, then space, \t, \n, \r, \v, \f.
const Printable = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~ \t\n\r\x0b\x0c"
