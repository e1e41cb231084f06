// Package fetch downloads the datasets pfl reads from their official addresses into one
// data folder ($PFL_DATA, by default under the user's cache folder), resumably (HTTP Range),
// verified against the checksums their publishers give, and finds a dataset a config names:
// the path the config gives when it exists, else the fetched copy (Resolve). Datasets whose
// licence or host needs a person (a login, terms to accept) are not downloaded: Get prints
// the steps, then verifies and unpacks the file once it is placed by hand.
//
// Nothing half-written is ever taken for complete: a file is downloaded to <name>.part and
// renamed only once its checksum matched, an archive is unpacked into a temporary folder
// renamed into place when whole, and a dataset counts as fetched only when its record
// (pfl-data.json) has been written after all that.
package fetch

import (
	"fmt"
	"slices"
	"strings"
)

// File is one file of a dataset.
type File struct {
	Name string   // its name in the dataset's folder
	URLs []string // the official address first, then mirrors, tried in turn; none for a file placed by hand
	// MD5 is the checksum its publisher gives (hex); "" where none is published, in which
	// case the SHA-256 of the first copy is recorded in pfl-data.json and printed.
	MD5 string
	// Size is its length in bytes where known (0: not known, in which case no more than
	// maxUnknownSize is accepted): a download is refused past it, and not begun on a disk
	// without room for it.
	Size int64
	// Unpack makes Get unpack the file (a .zip) into the dataset's folder once verified.
	Unpack bool
}

// Dataset is one dataset pfl can fetch, or explain how to fetch.
type Dataset struct {
	Name  string   // what pfl data get takes
	Kinds []string // the data.dataset kinds it serves (cifar10, kermany-binary, ...)
	Title string
	Page  string // where its publisher describes it and its licence
	// Checksums says where the checksums come from, or that none is published.
	Checksums string
	Files     []File
	// Path is what a data.dataset spec names, relative to the dataset's folder: a file
	// (cifar-10-binary.tar.gz) or a folder ("" is the folder itself).
	Path string
	// System is a copy a system package installs (Debian's Fashion-MNIST), used as it is.
	System string
	// Manual, when set, says why pfl does not download the files and how to get them; Get
	// prints it while they are missing.
	Manual string
}

// Catalog lists the datasets pfl reads. Tests replace it (and its addresses) to fetch from
// a local server.
var Catalog = []Dataset{
	{
		Name: "fashion-mnist", Kinds: []string{"fashion-mnist"}, Title: "Fashion-MNIST",
		Page:      "https://github.com/zalandoresearch/fashion-mnist",
		Checksums: "MD5s published by torchvision (torchvision.datasets.FashionMNIST)",
		Files: idxFiles([]string{"http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"},
			[4]string{"8d4fb7e6c68d591d4c3dfef9ec88bf0d", "25c81989df183df01b3e8a0aad5dffbe",
				"bef4ecab320f06d8554ea6380940ec79", "bb300cfdad3c16e7a12a480ee83cd310"},
			[4]int64{26421880, 29515, 4422102, 5148}),
		System: "/usr/share/datasets/fashion-mnist", // Debian's dataset-fashion-mnist
	},
	{
		Name: "mnist", Kinds: []string{"mnist"}, Title: "MNIST",
		Page:      "http://yann.lecun.com/exdb/mnist/",
		Checksums: "MD5s published by torchvision (torchvision.datasets.MNIST), whose mirror follows the official address",
		Files: idxFiles([]string{"http://yann.lecun.com/exdb/mnist/", "https://ossci-datasets.s3.amazonaws.com/mnist/"},
			[4]string{"f68b3c2dcbeaaa9fbdd348bbdeb94873", "d53e105ee54ea40749a09fcbcd1e9432",
				"9fb629c4189551a2d022fa330f9573f3", "ec29112dd5afa0611ce80d1b7f02629c"},
			[4]int64{9912422, 28881, 1648877, 4542}),
	},
	{
		Name: "cifar10", Kinds: []string{"cifar10"}, Title: "CIFAR-10 (binary version)",
		Page:      "https://www.cs.toronto.edu/~kriz/cifar.html",
		Checksums: "MD5 published on the CIFAR page (torchvision reads the Python version, whose MD5 differs)",
		Files: []File{{Name: "cifar-10-binary.tar.gz", URLs: []string{"https://www.cs.toronto.edu/~kriz/cifar-10-binary.tar.gz"},
			MD5: "c32a1d4ab5d03f1284b67883e8d87530", Size: 170052171}},
		Path: "cifar-10-binary.tar.gz",
	},
	{
		Name: "cifar100", Kinds: []string{"cifar100"}, Title: "CIFAR-100 (binary version)",
		Page:      "https://www.cs.toronto.edu/~kriz/cifar.html",
		Checksums: "MD5 published on the CIFAR page (torchvision reads the Python version, whose MD5 differs)",
		Files: []File{{Name: "cifar-100-binary.tar.gz", URLs: []string{"https://www.cs.toronto.edu/~kriz/cifar-100-binary.tar.gz"},
			MD5: "03b5dce01913d631647c71ecec9e9cb8", Size: 168513733}},
		Path: "cifar-100-binary.tar.gz",
	},
	{
		Name: "organamnist", Kinds: []string{"organamnist"}, Title: "OrganAMNIST (MedMNIST v3, 28×28)",
		Page:      "https://medmnist.com (CC BY 4.0)",
		Checksums: "MD5 published by MedMNIST (medmnist/info.py, v3.0)",
		Files: []File{{Name: "organamnist.npz", URLs: []string{"https://zenodo.org/records/10519652/files/organamnist.npz?download=1"},
			MD5: "68e3f8846a6bd62f0c9bf841c0d9eacc"}},
		Path: "organamnist.npz",
	},
	{
		Name: "kermany", Kinds: []string{"kermany", "kermany-binary"}, Title: "Kermany's chest X-rays (ChestXRay2017)",
		Page:      "https://data.mendeley.com/datasets/rscbjbr9sj/2 (CC BY 4.0)",
		Checksums: "none published: pfl records the SHA-256 of the first copy it fetches in pfl-data.json and prints it",
		Files: []File{{Name: "ChestXRay2017.zip", Unpack: true,
			URLs: []string{"https://data.mendeley.com/public-files/datasets/rscbjbr9sj/files/f12eaf6d-6023-432f-acc9-80c9d7393433/file_downloaded"}}},
	},
	{
		Name: "officehome", Kinds: []string{"officehome"}, Title: "Office-Home",
		Page:      "https://www.hemanthdv.org/officeHomeDataset.html",
		Checksums: "none published: pfl records the SHA-256 of the archive it unpacks in pfl-data.json and prints it",
		Files:     []File{{Name: "OfficeHomeDataset_10072016.zip", Unpack: true}},
		Path:      "OfficeHomeDataset_10072016",
		Manual: `Office-Home is for non-commercial research and education under its authors' terms, which
a person accepts on its page, and is served from Google Drive; pfl does not download it.
  1. Open https://www.hemanthdv.org/officeHomeDataset.html, read the terms, download
     OfficeHomeDataset_10072016.zip.
  2. Put it at {dir}/OfficeHomeDataset_10072016.zip
  3. Run pfl data get officehome again: it records the archive's SHA-256 and unpacks it.`,
	},
	{
		Name: "rsna", Kinds: []string{"rsna"}, Title: "RSNA Pneumonia Detection Challenge (stage 2)",
		Page:      "https://www.kaggle.com/c/rsna-pneumonia-detection-challenge",
		Checksums: "none published: pfl records the SHA-256 of the archive it unpacks in pfl-data.json and prints it",
		Files:     []File{{Name: "rsna-pneumonia-detection-challenge.zip", Unpack: true}},
		Manual: `The RSNA Pneumonia Detection Challenge's data is under Kaggle's competition rules: each
user accepts them with a Kaggle account, and may not redistribute it; pfl does not
download it.
  1. Sign in at https://www.kaggle.com, accept the rules at
     https://www.kaggle.com/c/rsna-pneumonia-detection-challenge/rules
  2. Create an API token (Account, "Create New Token"; it saves ~/.kaggle/kaggle.json),
     then: pip install kaggle
           kaggle competitions download -c rsna-pneumonia-detection-challenge -p {dir}
     (or download the archive in the browser from the competition's Data tab and put it at
     {dir}/rsna-pneumonia-detection-challenge.zip)
  3. Run pfl data get rsna again: it records the archive's SHA-256 and unpacks it
     (stage_2_train_labels.csv and stage_2_train_images/ are what pfl reads).`,
	},
	{
		Name: "shakespeare", Kinds: []string{"shakespeare"}, Title: "Shakespeare (LEAF, FedTP's split)",
		Page:      "https://github.com/TalwalkarLab/leaf/tree/master/data/shakespeare",
		Checksums: "none: the clients are made by LEAF's and FedTP's Python scripts from Project Gutenberg's text, which Gutenberg revises",
		Path:      "all_data/train",
		Manual: `Shakespeare's clients are made by LEAF's preprocessing (Python) from Project Gutenberg's
text, then split by FedTP's script; pfl does not run them.
  1. git clone https://github.com/TalwalkarLab/leaf
     cd leaf/data/shakespeare && ./preprocess.sh -s niid --sf 1.0 -k 0 -t sample
     (it writes data/raw_data/by_play_and_character/, one file per role)
  2. git clone https://github.com/zhyczy/FedTP
     mkdir -p FedTP/data/shakespeare/raw_data
     cp -r leaf/data/shakespeare/data/raw_data/by_play_and_character FedTP/data/shakespeare/raw_data/
     cd FedTP/data/shakespeare && python generate_data.py --s_frac 0.2 --tr_frac 0.8 --seed 12345
  3. mkdir -p {dir} && cp -r FedTP/data/shakespeare/all_data {dir}/
  4. Run pfl data get shakespeare again to record it (pfl reads {dir}/all_data/train).
LEAF's own JSON (leaf/data/shakespeare/data/train and test) is read too:
data.dataset: shakespeare:<folder holding train/ and test/>, with data.seq_len 80.`,
	},
}

// idxFiles are the four gzipped IDX files of an MNIST-layout dataset at each of bases,
// with their MD5s and sizes in the order train images, train labels, test images, test
// labels.
func idxFiles(bases []string, md5s [4]string, sizes [4]int64) []File {
	var out []File
	for i, name := range []string{"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"} {
		f := File{Name: name, MD5: md5s[i], Size: sizes[i]}
		for _, b := range bases {
			f.URLs = append(f.URLs, b+name)
		}
		out = append(out, f)
	}
	return out
}

// Lookup returns the catalog's dataset of a name or of a data.dataset kind.
func Lookup(name string) (Dataset, bool) {
	for _, d := range Catalog {
		if d.Name == name || slices.Contains(d.Kinds, name) {
			return d, true
		}
	}
	return Dataset{}, false
}

// Names lists the catalog's names, for messages.
func Names() string {
	var names []string
	for _, d := range Catalog {
		names = append(names, d.Name)
	}
	return strings.Join(names, ", ")
}

// manualSteps is d.Manual with {dir} replaced by the dataset's folder.
func (d Dataset) manualSteps(dir string) string {
	return strings.ReplaceAll(d.Manual, "{dir}", dir)
}

// ManualError is Get's error for a dataset whose files must be placed by hand and are
// not there yet; Steps says how.
type ManualError struct {
	Dataset string
	Steps   string
}

// Error says that the dataset is fetched by hand, and how.
func (e *ManualError) Error() string {
	return fmt.Sprintf("%s must be fetched by hand:\n%s", e.Dataset, e.Steps)
}
