package data

import (
	"fmt"
	"os"
	"strings"
)

// OfficeHomeDomains are Office-Home's four domains (Venkateswara et al., 2017) in the
// order FedPerfix gives them four clients each; they are also the sorted folder names.
var OfficeHomeDomains = []string{"Art", "Clipart", "Product", "Real World"}

// OfficeHomeSize is the side FedPerfix resizes every Office-Home photo to (Resize((224,
// 224)), ignoring the aspect ratio): the images are stored at this size, 2.3 GB as uint8
// for its 15,588 images.
const OfficeHomeSize = 224

// LoadOfficeHome loads Office-Home from root, the extracted OfficeHomeDataset_10072016
// folder (root/<domain>/<class>/*.jpg, 65 classes), at size×size (OfficeHomeSize in
// FedPerfix). Office-Home has no official test set: Test is empty and the set is meant
// for the FedPerfix convention (pool, partition, split each client).
func LoadOfficeHome(root string, size int) (*Split, error) {
	return loadDomains("officehome", root, OfficeHomeDomains, size)
}

// LoadDomains loads a dataset of domain folders the way LoadOfficeHome does, taking the
// domains to be root's sorted sub-folders (hidden ones skipped).
func LoadDomains(name, root string, size int) (*Split, error) {
	if err := checkFolder(name, root); err != nil {
		return nil, err
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("data: %s: %w", name, err)
	}
	var domains []string
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			domains = append(domains, e.Name())
		}
	}
	if len(domains) == 0 {
		return nil, fmt.Errorf("data: %s: %s has no domain sub-folders (want root/<domain>/<class>/<image>)", name, root)
	}
	return loadDomains(name, root, domains, size)
}

// loadDomains loads the named domains of root as the train set of a Split with an empty
// test set (LoadImageFolder checks that every domain holds images).
func loadDomains(name, root string, domains []string, size int) (*Split, error) {
	if err := checkFolder(name, root); err != nil {
		return nil, err
	}
	x, err := LoadDomainFolders(name, root, domains, size)
	if err != nil {
		return nil, err
	}
	test := &Images{Name: name + "/test", C: x.C, H: x.H, W: x.W, Classes: x.Classes, ClassNames: x.ClassNames,
		Domains: []int64{}, DomainNames: x.DomainNames}
	return newSplit(x, test)
}

// checkFolder says, naming the path, when root is not given, missing or not a folder.
func checkFolder(name, root string) error {
	if root == "" {
		return fmt.Errorf("data: %s needs a folder: %s:<dir>", name, name)
	}
	fi, err := os.Stat(root)
	switch {
	case err != nil:
		return fmt.Errorf("data: %s: %w", name, err)
	case !fi.IsDir():
		return fmt.Errorf("data: %s: %s is not a folder", name, root)
	}
	return nil
}
