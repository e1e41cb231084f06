// Package data loads pfl's datasets, partitions them over clients the ways the three
// papers do (IID, per-class Dirichlet, pathological k classes, two-stage Pachinko,
// per-domain Dirichlet, coarse-class groups, noise-based feature imbalance, novel-client
// hold-out), writes partition manifests and label heatmaps, and serves client-stacked
// batches from device-resident uint8 data.
//
// Every loader checks magic numbers and sizes: a truncated or corrupt file is an error
// that names the file and what is wrong.
package data

import "fmt"

// Images is a labelled image set as uint8 pixels, N images of C×H×W each, row-major
// (channel, row, column within an image).
type Images struct {
	Name       string
	N, C, H, W int
	Pixels     []uint8 // len N·C·H·W
	Labels     []int64 // len N, in [0, Classes)
	Classes    int
	ClassNames []string // optional, len Classes

	// Coarse labels (CIFAR-100's 20 superclasses), nil when the set has none.
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

// Validate checks the sizes and label ranges of x.
func (x *Images) Validate() error {
	switch {
	case x.N < 0 || x.C <= 0 || x.H <= 0 || x.W <= 0:
		return fmt.Errorf("data: %s: bad geometry %d×%d×%d×%d", x.Name, x.N, x.C, x.H, x.W)
	case len(x.Pixels) != x.N*x.C*x.H*x.W:
		return fmt.Errorf("data: %s: %d pixel bytes for %d images of %d×%d×%d", x.Name, len(x.Pixels), x.N, x.C, x.H, x.W)
	case len(x.Labels) != x.N:
		return fmt.Errorf("data: %s: %d labels for %d images", x.Name, len(x.Labels), x.N)
	case x.Classes <= 0:
		return fmt.Errorf("data: %s: %d classes", x.Name, x.Classes)
	case x.ClassNames != nil && len(x.ClassNames) != x.Classes:
		return fmt.Errorf("data: %s: %d class names for %d classes", x.Name, len(x.ClassNames), x.Classes)
	case x.Coarse != nil && (len(x.Coarse) != x.N || x.CoarseClasses <= 0):
		return fmt.Errorf("data: %s: %d coarse labels (%d classes) for %d images", x.Name, len(x.Coarse), x.CoarseClasses, x.N)
	case x.Domains != nil && (len(x.Domains) != x.N || len(x.DomainNames) == 0):
		return fmt.Errorf("data: %s: %d domain indices (%d domains) for %d images", x.Name, len(x.Domains), len(x.DomainNames), x.N)
	}
	for i, l := range x.Labels {
		if l < 0 || l >= int64(x.Classes) {
			return fmt.Errorf("data: %s: image %d has label %d, outside [0, %d)", x.Name, i, l, x.Classes)
		}
	}
	for i, l := range x.Coarse {
		if l < 0 || l >= int64(x.CoarseClasses) {
			return fmt.Errorf("data: %s: image %d has coarse label %d, outside [0, %d)", x.Name, i, l, x.CoarseClasses)
		}
	}
	for i, d := range x.Domains {
		if d < 0 || d >= int64(len(x.DomainNames)) {
			return fmt.Errorf("data: %s: image %d has domain %d, outside [0, %d)", x.Name, i, d, len(x.DomainNames))
		}
	}
	return nil
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
