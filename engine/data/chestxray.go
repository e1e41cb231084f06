package data

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"pfl/engine/data/dicom"
)

// The two chest X-ray datasets of TransFed (Ashraf et al., WACV 2024): RSNA Pneumonia
// and Kermany's pediatric chest X-rays. Neither ships with pfl; users point it at their
// own copy in the layout its distributor uses. Both are stored as grey 1-channel images
// resized on the host to a square side (ChestXRaySize unless the spec names one), as
// Office-Home is: data.image_size resizes further on the device, and data.channels: 3
// repeats the grey channel for an RGB model.

// ChestXRaySize is the side the chest X-ray loaders resize every image to unless the
// spec names another (rsna:<dir>:<side>): 224, the input side of FocalNet-T, the
// backbone TransFed builds on. The originals are 1024×1024 (RSNA) or of various sizes
// around 1,000 to 2,000 pixels (Kermany); their aspect ratio is ignored, as
// torchvision's Resize((224, 224)) ignores it. At 224 RSNA's 26,684 patients take
// 1.3 GB as uint8.
const ChestXRaySize = 224

// maxChestXRaySize bounds the side a spec may ask for: the RSNA originals are 1024
// pixels wide, and larger sides only multiply the memory the set takes.
const maxChestXRaySize = 1024

// The RSNA Pneumonia Detection Challenge's files (Kaggle, stage 2): the training labels
// and the folder of one DICOM file per patient.
const (
	RSNALabelsFile = "stage_2_train_labels.csv"
	RSNAImagesDir  = "stage_2_train_images"
)

// RSNATestFraction is the share of each class's patients LoadRSNA puts in its test part.
const RSNATestFraction = 0.2

// RSNAClasses are LoadRSNA's classes: a patient's Target 0 (the challenge's "Normal" and
// "No Lung Opacity / Not Normal" patients alike) and Target 1 (lung opacity suspicious
// of pneumonia).
var RSNAClasses = []string{"normal", "pneumonia"}

// KermanyClasses are LoadKermany's (fine) classes, from the folder and file names:
// NORMAL/*, PNEUMONIA/*_bacteria_*, PNEUMONIA/*_virus_*.
var KermanyClasses = []string{"normal", "bacterial", "viral"}

// KermanyCoarseClasses are LoadKermany's coarse classes (the folders), and
// LoadKermanyBinary's classes.
var KermanyCoarseClasses = []string{"normal", "pneumonia"}

// chestSpec reads a chest X-ray spec's path, <dir> or <dir>:<side>: a last
// colon-separated field of digits is the side (a folder whose own name ends in :<digits>
// is given with the side, <dir>:<side>).
func chestSpec(kind, path string) (dir string, side int, err error) {
	dir, side = path, ChestXRaySize
	if i := strings.LastIndexByte(path, ':'); i >= 0 {
		if v, err := strconv.Atoi(path[i+1:]); err == nil && strings.Trim(path[i+1:], "0123456789") == "" {
			dir, side = path[:i], v
			if side < 1 || side > maxChestXRaySize {
				return "", 0, fmt.Errorf("data: %s:%s: side %d, want 1 to %d", kind, path, side, maxChestXRaySize)
			}
		}
	}
	return dir, side, nil
}

// loadGrey loads one image file as 1×size×size grey pixels: a .dcm file with package
// dicom, a PNG or JPEG as LoadImageFolder does (converted to grey rather than RGB).
func loadGrey(path string, size int) ([]uint8, error) {
	if strings.EqualFold(filepath.Ext(path), ".dcm") {
		img, err := dicom.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("data: %w", err)
		}
		return resizePIL(img.Pixels, 1, img.Rows, img.Columns, size, size), nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("data: %w", err)
	}
	return decodeImageGrey(path, b, size, maxImagePixels)
}

// greyImages loads the image files paths, labelled labels, as a grey image set.
func greyImages(name, source string, paths []string, labels []int64, classNames []string, size int) (*Images, error) {
	x := &Images{Name: name, Source: source, N: len(paths), C: 1, H: size, W: size, Labels: labels,
		Classes: len(classNames), ClassNames: classNames}
	var err error
	if x.Pixels, err = loadImages(paths, size*size, func(p string) ([]uint8, error) { return loadGrey(p, size) }); err != nil {
		return nil, err
	}
	return x, x.Validate()
}

// LoadRSNA loads the RSNA Pneumonia Detection Challenge's training set from root, the
// folder holding RSNALabelsFile (patientId,x,y,width,height,Target: one row per
// bounding box, so several rows for some patients, and one row with an empty box for a
// patient without opacity) and RSNAImagesDir/<patientId>.dcm. Converted copies,
// <patientId>.png, .jpg or .jpeg in the same folder, are read as well (a patient with
// several takes the .dcm, else the .png, else the JPEG). Each patient is one image of
// class 1 (pneumonia) if any of its rows has Target 1, else 0 (normal); images are grey
// and size×size (ChestXRaySize in Open unless the spec names a side).
//
// The challenge's test labels were never released, so RSNA has no official test split.
// LoadRSNA makes a fixed one: of each class, the RSNATestFraction (rounded to the
// nearest patient) whose SHA-256 of the patientId is smallest form the test part. The
// rule depends on the IDs alone, not on a seed or the order of the CSV, so every run
// and every tool (sha256 in Python's hashlib) gets the same split, stratified. Under the
// fedperfix convention the two parts are merged again before partitioning. Within each
// part, patients keep the order of their first row in the CSV.
func LoadRSNA(root string, size int) (*Split, error) {
	if err := checkFolder("rsna", root); err != nil {
		return nil, err
	}
	if size < 1 {
		return nil, fmt.Errorf("data: rsna: image side %d, want > 0", size)
	}
	labelsPath := filepath.Join(root, RSNALabelsFile)
	b, err := os.ReadFile(labelsPath)
	if err != nil {
		return nil, fmt.Errorf("data: rsna: %w (want %s/{%s,%s/<patientId>.dcm})", err, root, RSNALabelsFile, RSNAImagesDir)
	}
	ids, positive, err := parseRSNALabels(labelsPath, b)
	if err != nil {
		return nil, err
	}
	imgDir := filepath.Join(root, RSNAImagesDir)
	files, err := rsnaImageFiles(imgDir)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, id := range ids {
		if _, ok := files[id]; !ok {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("data: rsna: %s: no image for %d of the %d patients of %s, among them %s (want <patientId>.dcm, .png or .jpg)",
			imgDir, len(missing), len(ids), RSNALabelsFile, clip(missing[0]))
	}
	test := rsnaTestSplit(ids, positive)
	var parts [2]struct {
		paths  []string
		labels []int64
	}
	for i, id := range ids {
		p := &parts[0]
		if test[i] {
			p = &parts[1]
		}
		p.paths = append(p.paths, filepath.Join(imgDir, files[id]))
		p.labels = append(p.labels, int64(boolInt(positive[i])))
	}
	var sets [2]*Images
	for i, part := range []string{"train", "test"} {
		if sets[i], err = greyImages("rsna/"+part, root, parts[i].paths, parts[i].labels, slices.Clone(RSNAClasses), size); err != nil {
			return nil, err
		}
	}
	return newSplit(sets[0], sets[1])
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// rsnaImageFiles maps each patientId of the image folder to its file name, preferring
// .dcm, then .png, .jpg and .jpeg (any case); other and hidden files are skipped.
func rsnaImageFiles(dir string) (map[string]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("data: rsna: %w", err)
	}
	rank := map[string]int{".dcm": 1, ".png": 2, ".jpg": 3, ".jpeg": 4}
	files := map[string]string{}
	for _, e := range ents {
		name := e.Name()
		ext := filepath.Ext(name)
		r := rank[strings.ToLower(ext)]
		if r == 0 || e.IsDir() || strings.HasPrefix(name, ".") {
			continue
		}
		id := strings.TrimSuffix(name, ext)
		if old, ok := files[id]; !ok || r < rank[strings.ToLower(filepath.Ext(old))] {
			files[id] = name
		}
	}
	return files, nil
}

// rsnaTestSplit marks the test patients: of each class, the RSNATestFraction (rounded)
// with the smallest SHA-256 of their ID.
func rsnaTestSplit(ids []string, positive []bool) []bool {
	test := make([]bool, len(ids))
	for _, class := range []bool{false, true} {
		type patient struct {
			i    int
			hash [32]byte
		}
		var ps []patient
		for i, id := range ids {
			if positive[i] == class {
				ps = append(ps, patient{i, sha256.Sum256([]byte(id))})
			}
		}
		slices.SortFunc(ps, func(a, b patient) int { return cmp.Or(bytes.Compare(a.hash[:], b.hash[:]), cmp.Compare(a.i, b.i)) })
		for _, p := range ps[:int(math.Round(RSNATestFraction*float64(len(ps))))] {
			test[p.i] = true
		}
	}
	return test
}

// parseRSNALabels reads the challenge's label CSV (its bytes b): a header naming at
// least the patientId and Target columns, then rows whose Target is 0 or 1. It returns
// the patients in the order of their first row, and whether any of a patient's rows has
// Target 1.
func parseRSNALabels(file string, b []byte) (ids []string, positive []bool, err error) {
	r := csv.NewReader(bytes.NewReader(b))
	r.ReuseRecord = true
	head, err := r.Read()
	if err != nil {
		if err == io.EOF {
			err = errors.New("empty")
		}
		return nil, nil, fmt.Errorf("data: %s: %w", file, err)
	}
	idCol, targetCol := -1, -1
	for i, h := range head {
		switch strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")) {
		case "patientId":
			idCol = i
		case "Target":
			targetCol = i
		}
	}
	if idCol < 0 || targetCol < 0 {
		return nil, nil, fmt.Errorf("data: %s: the header has no patientId and Target columns (want patientId,x,y,width,height,Target)", file)
	}
	index := map[string]int{}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("data: %s: %w", file, err)
		}
		line, _ := r.FieldPos(0)
		id := strings.TrimSpace(rec[idCol])
		if !validPatientID(id) {
			return nil, nil, fmt.Errorf("data: %s: line %d: patientId %s is not a file name", file, line, clip(id))
		}
		var pos bool
		switch t := strings.TrimSpace(rec[targetCol]); t {
		case "0":
		case "1":
			pos = true
		default:
			return nil, nil, fmt.Errorf("data: %s: line %d: Target %s, want 0 or 1", file, line, clip(t))
		}
		j, seen := index[id]
		if !seen {
			j = len(ids)
			index[id] = j
			ids = append(ids, id)
			positive = append(positive, false)
		}
		positive[j] = positive[j] || pos
	}
	if len(ids) == 0 {
		return nil, nil, fmt.Errorf("data: %s: no patients (a header and no rows)", file)
	}
	return ids, positive, nil
}

// validPatientID says whether id can name a file in the image folder: not empty, not
// hidden, no path separator or NUL, at most 200 bytes (the challenge's are 36-character
// UUIDs).
func validPatientID(id string) bool {
	return id != "" && len(id) <= 200 && !strings.HasPrefix(id, ".") && !strings.ContainsAny(id, "/\\\x00")
}

// LoadKermany loads Kermany et al.'s pediatric chest X-rays (Mendeley Data, "Labeled
// Optical Coherence Tomography (OCT) and Chest X-Ray Images for Classification",
// doi:10.17632/rscbjbr9sj.2) from root, the chest_xray folder or a folder holding it:
// chest_xray/{train,test}/{NORMAL,PNEUMONIA}/*.jpeg, with an optional val folder alike
// (Kaggle's copy moves 16 training images there) merged into train, so that train is
// the 5,232 images of the original release and test its 624.
//
// Classes are fine and coarse as CIFAR-100's, so the two-stage Pachinko partition runs
// on it: the class is normal, bacterial or viral (KermanyClasses; the NORMAL folder, or
// _bacteria_ or _virus_ in a PNEUMONIA file's name, any case), the coarse class normal
// or pneumonia (KermanyCoarseClasses, the folder). Images are grey, size×size.
func LoadKermany(root string, size int) (*Split, error) {
	return loadKermany("kermany", root, size, false)
}

// LoadKermanyBinary loads Kermany's chest X-rays as LoadKermany does, with the two
// folders, normal and pneumonia, as the classes and no coarse labels: TransFed's
// two-class task, for the pathological and Dirichlet partitions.
func LoadKermanyBinary(root string, size int) (*Split, error) {
	return loadKermany("kermany-binary", root, size, true)
}

// kermanyFolders are the class folders of each part, the coarse classes in order.
var kermanyFolders = []string{"NORMAL", "PNEUMONIA"}

func loadKermany(name, root string, size int, binary bool) (*Split, error) {
	if err := checkFolder(name, root); err != nil {
		return nil, err
	}
	if size < 1 {
		return nil, fmt.Errorf("data: %s: image side %d, want > 0", name, size)
	}
	if !isDir(filepath.Join(root, "train")) {
		if sub := filepath.Join(root, "chest_xray"); isDir(filepath.Join(sub, "train")) {
			root = sub
		} else {
			return nil, fmt.Errorf("data: %s: %s has neither train/ nor chest_xray/train/ (want chest_xray/{train,test}/{NORMAL,PNEUMONIA}/*.jpeg)", name, root)
		}
	}
	var sets [2]*Images
	for i, part := range [][]string{{"train", "val"}, {"test"}} {
		var paths, sources []string
		var fine, coarse []int64
		for _, folder := range part {
			dir := filepath.Join(root, folder)
			if folder == "val" && !isDir(dir) {
				continue
			}
			p, f, c, err := kermanyPart(dir)
			if err != nil {
				return nil, fmt.Errorf("data: %s: %w", name, err)
			}
			paths, fine, coarse = append(paths, p...), append(fine, f...), append(coarse, c...)
			sources = append(sources, dir)
		}
		if len(paths) == 0 {
			return nil, fmt.Errorf("data: %s: %s holds no images (.jpeg, .jpg or .png in NORMAL and PNEUMONIA)", name, strings.Join(sources, " and "))
		}
		labels, classes := fine, KermanyClasses
		if binary {
			labels, classes = coarse, KermanyCoarseClasses
		}
		x, err := greyImages(name+"/"+part[0], strings.Join(sources, " and "), paths, labels, slices.Clone(classes), size)
		if err != nil {
			return nil, err
		}
		if !binary {
			x.Coarse, x.CoarseClasses = coarse, len(KermanyCoarseClasses)
			if err := x.Validate(); err != nil {
				return nil, err
			}
		}
		sets[i] = x
	}
	return newSplit(sets[0], sets[1])
}

// kermanyPart lists the images of one part folder (train, val or test): their paths,
// fine and coarse labels. Both class folders must be there (val is optional as a
// whole, not by halves); another sub-folder is an error, so that a misplaced copy is
// not silently left out.
func kermanyPart(dir string) (paths []string, fine, coarse []int64, err error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, nil, err
	}
	for _, e := range ents {
		if e.IsDir() && !strings.HasPrefix(e.Name(), ".") && !slices.Contains(kermanyFolders, e.Name()) {
			return nil, nil, nil, fmt.Errorf("%s: unexpected folder %s (want NORMAL and PNEUMONIA)", dir, clip(e.Name()))
		}
	}
	for c, folder := range kermanyFolders {
		sub := filepath.Join(dir, folder)
		files, err := os.ReadDir(sub)
		if err != nil {
			return nil, nil, nil, err
		}
		for _, f := range files {
			switch strings.ToLower(filepath.Ext(f.Name())) {
			case ".png", ".jpg", ".jpeg":
			default:
				continue
			}
			if f.IsDir() || strings.HasPrefix(f.Name(), ".") {
				continue
			}
			label := 0
			if c == 1 {
				if label, err = kermanyFine(f.Name()); err != nil {
					return nil, nil, nil, fmt.Errorf("%s: %w", filepath.Join(sub, f.Name()), err)
				}
			}
			paths = append(paths, filepath.Join(sub, f.Name()))
			fine, coarse = append(fine, int64(label)), append(coarse, int64(c))
		}
	}
	return paths, fine, coarse, nil
}

// kermanyFine is the fine class of a PNEUMONIA file from its name
// (person1_bacteria_1.jpeg, person1_virus_6.jpeg): 1 bacterial, 2 viral.
func kermanyFine(name string) (int, error) {
	l := strings.ToLower(name)
	b, v := strings.Contains(l, "bacteria"), strings.Contains(l, "virus")
	switch {
	case b && !v:
		return 1, nil
	case v && !b:
		return 2, nil
	}
	return 0, errors.New("a PNEUMONIA file's name must say bacteria or virus (person1_bacteria_1.jpeg, person1_virus_6.jpeg)")
}

// isDir says whether path is a folder.
func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}
