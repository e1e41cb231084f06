package data

import (
	"fmt"
	"strconv"
	"strings"
)

// Open loads an image dataset from a spec "kind" or "kind:path":
//
//	fashion-mnist[:dir]        IDX files (default: Debian's dataset-fashion-mnist)
//	mnist:dir                  IDX files of MNIST or EMNIST
//	cifar10:path               the binary version, extracted or the .tar.gz
//	cifar100:path              likewise, with coarse labels
//	organamnist:file.npz       MedMNIST's OrganAMNIST (11 classes)
//	officehome:dir             Office-Home's four domain folders at 224×224, no test set
//	domains:dir                any dir/<domain>/<class>/<image> tree likewise
//	rsna:dir[:side]            RSNA Pneumonia's training set, grey, side×side (224), fixed 80/20 split
//	kermany:dir[:side]         Kermany's chest X-rays, grey: normal/bacterial/viral in normal/pneumonia
//	kermany-binary:dir[:side]  the same with the two coarse classes only
//	synthetic[:n[:c[:t]]]      class-conditional 3×32×32 data: n train images (5,000), c classes (10), t test images (n/5)
//
// The chest X-ray sets (LoadRSNA, LoadKermany, LoadKermanyBinary) are resized on the
// host to side×side: ChestXRaySize unless the spec ends in :<side>.
func Open(spec string) (*Split, error) {
	kind, path, _ := strings.Cut(spec, ":")
	switch kind {
	case "fashion-mnist":
		return FashionMNIST(path)
	case "mnist":
		return LoadMNISTDir("mnist", path, 10)
	case "cifar10":
		return LoadCIFAR10(path)
	case "cifar100":
		return LoadCIFAR100(path)
	case "organamnist":
		return LoadMedMNIST("organamnist", path, 11)
	case "officehome":
		return LoadOfficeHome(path, OfficeHomeSize)
	case "domains":
		return LoadDomains("domains", path, OfficeHomeSize)
	case "rsna", "kermany", "kermany-binary":
		dir, side, err := chestSpec(kind, path)
		if err != nil {
			return nil, err
		}
		switch kind {
		case "rsna":
			return LoadRSNA(dir, side)
		case "kermany":
			return LoadKermany(dir, side)
		}
		return LoadKermanyBinary(dir, side)
	case "synthetic":
		n, classes, test, err := syntheticSpec(path)
		if err != nil {
			return nil, err
		}
		return newSplit(Synthetic("synthetic/train", n, 3, 32, 32, classes, 1), Synthetic("synthetic/test", test, 3, 32, 32, classes, 2))
	}
	return nil, fmt.Errorf("data: unknown dataset %q; choose fashion-mnist[:dir], mnist:dir, cifar10:path, cifar100:path, organamnist:file.npz, officehome:dir, domains:dir, rsna:dir[:side], kermany:dir[:side], kermany-binary:dir[:side] or synthetic[:n[:classes[:test]]]", kind)
}

// syntheticSpec reads synthetic[:N[:CLASSES[:TEST]]]: N training images (default 5,000) of
// CLASSES classes (default 10) and TEST test images (default N/5, at least 10).
func syntheticSpec(path string) (n, classes, test int, err error) {
	n, classes = 5000, 10
	fields := []string{}
	if path != "" {
		fields = strings.Split(path, ":")
	}
	if len(fields) > 3 {
		return 0, 0, 0, fmt.Errorf("data: synthetic:%s: want synthetic[:N[:CLASSES[:TEST]]]", path)
	}
	vals := []*int{&n, &classes, &test}
	for i, f := range fields {
		v, perr := strconv.Atoi(f)
		if perr != nil {
			return 0, 0, 0, fmt.Errorf("data: synthetic:%s: %q is not a whole number (synthetic[:N[:CLASSES[:TEST]]])", path, f)
		}
		*vals[i] = v
	}
	if len(fields) < 3 {
		test = max(n/5, 10)
	}
	switch {
	case n < 10:
		return 0, 0, 0, fmt.Errorf("data: synthetic:%s: want a sample count of at least 10", path)
	case classes < 2 || classes > 1000:
		return 0, 0, 0, fmt.Errorf("data: synthetic:%s: want 2 to 1,000 classes", path)
	case test < 1 || n > 1_000_000 || test > 1_000_000:
		return 0, 0, 0, fmt.Errorf("data: synthetic:%s: want 1 to 1,000,000 test and at most 1,000,000 training images", path)
	}
	return n, classes, test, nil
}
