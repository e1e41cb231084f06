package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/md5"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"pfl/cuda"
	"pfl/engine/config"
	"pfl/engine/data"
	"pfl/engine/data/fetch"
)

// toyCIFARArchive is a small CIFAR archive in the official binary layout: folder/<name>
// with records records each (a label byte per label, then 3×32×32 pixels) for every name,
// label i mod classes (and a coarse label (i mod classes)/5 first when labels is 2).
func toyCIFARArchive(t *testing.T, folder string, names []string, records, labels, classes int) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, name := range names {
		var b []byte
		for i := 0; i < records; i++ {
			fine := i % classes
			if labels == 2 {
				b = append(b, byte(fine/5))
			}
			b = append(b, byte(fine))
			for j := 0; j < 3072; j++ {
				b = append(b, byte((i*7919+j*104729)%251))
			}
		}
		if err := tw.WriteHeader(&tar.Header{Name: folder + "/" + name, Mode: 0o644, Size: int64(len(b)), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		tw.Write(b)
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// serveCatalog serves files by path on 127.0.0.1 and points the catalog's entries at it
// with the files' MD5s and sizes (restored when the test ends); it returns the request count.
func serveCatalog(t *testing.T, files map[string][]byte) *int {
	requests := new(int)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		*requests++
		name := strings.TrimPrefix(r.URL.Path, "/")
		b, ok := files[name]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/gzip")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b))
	}))
	t.Cleanup(srv.Close)
	saved := fetch.Catalog
	t.Cleanup(func() { fetch.Catalog = saved })
	fetch.Catalog = slices.Clone(saved)
	for i, d := range fetch.Catalog {
		d.Files = slices.Clone(d.Files)
		for j, f := range d.Files {
			if b, ok := files[f.Name]; ok {
				sum := md5.Sum(b)
				d.Files[j].URLs, d.Files[j].MD5, d.Files[j].Size = []string{srv.URL + "/" + f.Name}, hex.EncodeToString(sum[:]), int64(len(b))
			}
		}
		fetch.Catalog[i] = d
	}
	return requests
}

// TestDataOnDemand: a config naming data/cifar-10-binary.tar.gz on a machine without it
// fails naming pfl data get cifar10 and writes nothing; pfl data get fetches it (here
// from a local server standing in for the official address, checked against the MD5 the
// catalog gives) into $PFL_DATA, where the same config then finds it; data.download: true
// fetches CIFAR-100 when the run needs it.
func TestDataOnDemand(t *testing.T) {
	tmp := t.TempDir()
	requests := serveCatalog(t, map[string][]byte{
		"cifar-10-binary.tar.gz": toyCIFARArchive(t, "cifar-10-batches-bin",
			[]string{"data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin", "data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"}, 60, 1, 10),
		"cifar-100-binary.tar.gz": toyCIFARArchive(t, "cifar-100-binary", []string{"train.bin", "test.bin"}, 200, 2, 100),
	})
	store := filepath.Join(tmp, "store")
	t.Setenv(fetch.RootEnv, store)
	if _, err := cuda.Capabilities(); err != nil { // loads the native library, found from the package's folder
		t.Fatal(err)
	}
	t.Chdir(tmp) // data/... is looked for here first, as before
	runs := filepath.Join(tmp, "runs")
	cfg := toyConfig(t, runs, "c10", "")
	train := []string{"train", "-c", cfg, "--set", "suite=[]", "--set", "algorithm.name=fedavg", "--set", "data.dataset=cifar10:data/cifar-10-binary.tar.gz"}

	text := pfl(t, 1, train...)
	if !strings.Contains(text, "fetch it with: pfl data get cifar10") || !strings.Contains(text, filepath.Join(store, "cifar10", "cifar-10-binary.tar.gz")) {
		t.Fatalf("a config whose data is missing: %s", text)
	}
	if _, err := os.Stat(runs); err == nil {
		t.Fatal("a run whose data is missing wrote its directory")
	}
	// a suite finds it missing before it writes anything
	text = pfl(t, 1, "train", "-c", cfg, "--set", "data.dataset=cifar10")
	if _, err := os.Stat(runs); err == nil || !strings.Contains(text, "pfl data get cifar10") {
		t.Fatalf("a suite whose data is missing: %s (run folder: %v)", text, err)
	}
	if *requests != 0 {
		t.Fatalf("%d requests without being asked to fetch", *requests)
	}

	text = pfl(t, 0, "data", "get", "cifar10")
	if !strings.Contains(text, "(published MD5)") || !strings.Contains(text, "data.dataset: cifar10") {
		t.Fatalf("pfl data get cifar10: %s", text)
	}
	pfl(t, 0, train...)
	if text := pfl(t, 0, "data", "list"); !strings.Contains(text, filepath.Join(store, "cifar10", "cifar-10-binary.tar.gz")) {
		t.Errorf("pfl data list after the fetch: %s", text)
	}
	before := *requests
	pfl(t, 0, "data", "get", "cifar10") // fetched: checked, not fetched again
	if *requests != before {
		t.Errorf("a second pfl data get made %d requests", *requests-before)
	}

	pfl(t, 0, "train", "-c", toyConfig(t, runs, "c100", ""), "--set", "suite=[]", "--set", "algorithm.name=fedavg",
		"--set", "data.dataset=cifar100", "--set", "data.download=true")
	if _, ok := fetch.Fetched(store, mustLookup(t, "cifar100")); !ok {
		t.Error("data.download: true did not leave CIFAR-100 fetched")
	}
	if text := pfl(t, 1, "data", "get", "imagenet"); !strings.Contains(text, `no dataset "imagenet"`) || !strings.Contains(text, "cifar100") {
		t.Errorf("pfl data get imagenet: %s", text)
	}
	if text := pfl(t, 1, "train", "-c", cfg, "--set", "data.dataset=rsna:data/rsna", "--set", "data.download=true"); !strings.Contains(text, "pfl data get rsna prints the steps") {
		t.Errorf("data.download of a dataset fetched by hand: %s", text)
	}
	if text := pfl(t, 1, "data", "get", "rsna"); !strings.Contains(text, "kaggle competitions download -c rsna-pneumonia-detection-challenge -p "+filepath.Join(store, "rsna")) {
		t.Errorf("pfl data get rsna: %s", text)
	}
}

func mustLookup(t *testing.T, name string) fetch.Dataset {
	d, ok := fetch.Lookup(name)
	if !ok {
		t.Fatalf("no %s in the catalog", name)
	}
	return d
}

// TestDebiansFashionMNISTNeedsNoFetch: the catalog's system copy of Fashion-MNIST is the
// folder the loader reads by default, and where it is installed a config naming
// fashion-mnist uses it without fetching; PFL_DATA is one of the variables pfl reads.
func TestDebiansFashionMNISTNeedsNoFetch(t *testing.T) {
	if d := mustLookup(t, "fashion-mnist"); d.System != data.FashionMNISTDir {
		t.Fatalf("the catalog's Fashion-MNIST copy %q is not the loader's %q", d.System, data.FashionMNISTDir)
	}
	if !slices.Contains(config.OwnVariables(), fetch.RootEnv) {
		t.Fatalf("%s is not among the variables pfl reads", fetch.RootEnv)
	}
	if _, err := os.Stat(data.FashionMNISTDir); err != nil {
		t.Skipf("Debian's dataset-fashion-mnist is not installed (%v)", err)
	}
	serveCatalog(t, nil) // nothing to fetch from
	got, err := fetch.Resolve(context.Background(), "fashion-mnist", true, fetch.Options{Root: t.TempDir()})
	if err != nil || got != "fashion-mnist" {
		t.Fatalf("Resolve(fashion-mnist) = %q, %v; want the system's copy", got, err)
	}
}

// TestDataGetFromAndMirror: pfl data get NAME --from FILE takes a local copy, checked
// against the catalog's MD5, without a request; PFL_DATA_MIRROR, a folder, gives a dataset
// before its address is asked, and is one of the variables pfl accepts (a run with it set
// starts); --from with two datasets is refused.
func TestDataGetFromAndMirror(t *testing.T) {
	tmp := t.TempDir()
	c10 := toyCIFARArchive(t, "cifar-10-batches-bin", []string{"data_batch_1.bin", "test_batch.bin"}, 20, 1, 10)
	c100 := toyCIFARArchive(t, "cifar-100-binary", []string{"train.bin", "test.bin"}, 20, 2, 100)
	requests := serveCatalog(t, map[string][]byte{"cifar-10-binary.tar.gz": c10, "cifar-100-binary.tar.gz": c100})
	store := filepath.Join(tmp, "store")
	t.Setenv(fetch.RootEnv, store)
	copyPath := filepath.Join(tmp, "downloads", "cifar-10-binary (1).tar.gz")
	mirror := filepath.Join(tmp, "mirror")
	for path, b := range map[string][]byte{copyPath: c10, filepath.Join(mirror, "cifar-100-binary.tar.gz"): c100} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	text := pfl(t, 0, "data", "get", "cifar10", "--from", copyPath)
	if !strings.Contains(text, "(published MD5) from "+copyPath) || !strings.Contains(text, filepath.Join(store, "cifar10")) {
		t.Errorf("pfl data get cifar10 --from: %s", text)
	}
	if text := pfl(t, 1, "data", "get", "cifar10", "cifar100", "--from", copyPath); !strings.Contains(text, "--from gives the files of one dataset") {
		t.Errorf("--from with two datasets: %s", text)
	}
	t.Setenv(fetch.MirrorEnv, mirror)
	if text := pfl(t, 0, "data", "get", "cifar100"); !strings.Contains(text, "from "+filepath.Join(mirror, "cifar-100-binary.tar.gz")) {
		t.Errorf("pfl data get cifar100 with a mirror: %s", text)
	}
	if *requests != 0 {
		t.Errorf("%d requests; the copy and the mirror need none", *requests)
	}
	pfl(t, 0, "train", "-c", toyConfig(t, filepath.Join(tmp, "runs"), "m", ""), "--print-config")
	for _, k := range config.Keys() {
		if config.EnvName(k) == fetch.MirrorEnv {
			t.Errorf("%s is also the variable of config key %s", fetch.MirrorEnv, k)
		}
	}
}
