package data

import (
	"fmt"
	"strings"
)

// Open loads an image dataset from a spec "kind" or "kind:path":
//
//	fashion-mnist[:dir]      IDX files (default: Debian's dataset-fashion-mnist)
//	mnist:dir                IDX files of MNIST or EMNIST
//	cifar10:path             the binary version, extracted or the .tar.gz
//	cifar100:path            likewise, with coarse labels
//	organamnist:file.npz     MedMNIST's OrganAMNIST (11 classes)
//	officehome:dir           Office-Home's four domain folders at 224×224, no test set
//	domains:dir              any dir/<domain>/<class>/<image> tree likewise
//	synthetic[:n]            class-conditional 3×32×32 data, 10 classes (n train images)
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
	case "synthetic":
		n := 5000
		if path != "" {
			if _, err := fmt.Sscan(path, &n); err != nil || n < 10 {
				return nil, fmt.Errorf("data: synthetic:%s: want a sample count of at least 10", path)
			}
		}
		return newSplit(Synthetic("synthetic/train", n, 3, 32, 32, 10, 1), Synthetic("synthetic/test", max(n/5, 10), 3, 32, 32, 10, 2))
	}
	return nil, fmt.Errorf("data: unknown dataset %q; choose fashion-mnist[:dir], mnist:dir, cifar10:path, cifar100:path, organamnist:file.npz, officehome:dir, domains:dir or synthetic[:n]", kind)
}
