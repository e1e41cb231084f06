package data

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// domainTree writes one 2×2 greyscale PNG per path under a new temporary folder, the
// pixel value encoding the file's position in files, and returns the folder.
func domainTree(t *testing.T, files ...string) string {
	root := t.TempDir()
	for i, f := range files {
		putFile(t, root, f, pngBytes(t, greyImage(2, 2, uint8(10*i+10), 0, 0, 0)))
	}
	return root
}

func TestOpenDomainFolders(t *testing.T) {
	office := []string{"Art/cat/1.png", "Art/dog/1.png", "Clipart/cat/1.png", "Clipart/dog/1.png",
		"Product/cat/1.png", "Product/dog/1.png", "Product/dog/2.png", "Real World/cat/1.png", "Real World/dog/1.png"}
	for _, tc := range []struct {
		name, kind  string
		files       []string
		domains     []string
		wantDomains []int64
	}{
		{"officehome", "officehome", office, OfficeHomeDomains, []int64{0, 0, 1, 1, 2, 2, 2, 3, 3}},
		{"generic, sorted sub-folders", "domains", []string{"b/x/1.png", "a/x/1.png", "a/y/1.png", "b/y/1.png", ".git/x/1.png"},
			[]string{"a", "b"}, []int64{0, 0, 1, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := domainTree(t, tc.files...)
			sp, err := Open(tc.kind + ":" + root)
			if err != nil {
				t.Fatal(err)
			}
			x := sp.Train
			if x.C != 3 || x.H != OfficeHomeSize || x.W != OfficeHomeSize || x.N != len(tc.wantDomains) || x.Classes != 2 {
				t.Fatalf("%d images of %d×%d×%d, %d classes", x.N, x.C, x.H, x.W, x.Classes)
			}
			if !slices.Equal(x.DomainNames, tc.domains) || !slices.Equal(x.Domains, tc.wantDomains) {
				t.Fatalf("domains %v %v, want %v %v", x.DomainNames, x.Domains, tc.domains, tc.wantDomains)
			}
			if sp.Test.N != 0 || sp.Test.Validate() != nil || sp.Test.H != x.H || !slices.Equal(sp.Test.DomainNames, tc.domains) {
				t.Fatalf("test set: %d images, %v", sp.Test.N, sp.Test.Validate())
			}
			// the FedPerfix convention pools the images and keeps their domains
			fed, err := sp.Partition(PartitionConfig{Method: MethodIID, Convention: ConventionFedPerfix, Clients: 2, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if fed.Train.N != x.N || !slices.Equal(fed.Train.Domains, x.Domains) {
				t.Fatalf("pool: %d images, domains %v", fed.Train.N, fed.Train.Domains)
			}
			_, err = sp.Partition(PartitionConfig{Method: MethodIID, Clients: 2, Seed: 1})
			if err == nil || !strings.Contains(err.Error(), "no official test set") {
				t.Fatalf("FedTP convention: err = %v", err)
			}
		})
	}
}

func TestOpenDomainFoldersErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		kind  string
		files []string // written under a temporary root
		sub   string   // appended to the root in the spec
		want  string   // path under root the error must name ("." for the root itself)
		err   string
	}{
		{"missing folder", "officehome", nil, "nowhere", "nowhere", "no such file"},
		{"missing folder, generic", "domains", nil, "nowhere", "nowhere", "no such file"},
		{"a file, not a folder", "domains", []string{"f.png"}, "f.png", "f.png", "not a folder"},
		{"empty folder", "domains", nil, "", ".", "no domain sub-folders"},
		{"empty folder, officehome", "officehome", nil, "", "Art", "no such file"},
		{"missing domain", "officehome", []string{"Art/cat/1.png", "Clipart/cat/1.png", "Real World/cat/1.png"}, "", "Product", "no such file"},
		{"domain without images", "domains", []string{"a/cat/1.png", "b/cat/notes.txt"}, "", "b", "no images"},
		{"domain without classes", "domains", []string{"a/cat/1.png", "b/1.png"}, "", "b", "no class sub-folders"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := domainTree(t, tc.files...)
			_, err := Open(tc.kind + ":" + filepath.Join(root, tc.sub))
			if want := filepath.Join(root, tc.want); err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("err = %v, want one naming %s and containing %q", err, want, tc.err)
			}
		})
	}
	for _, spec := range []string{"officehome", "domains:"} {
		if _, err := Open(spec); err == nil || !strings.Contains(err.Error(), "needs a folder") {
			t.Errorf("Open(%q): err = %v", spec, err)
		}
	}
}

// TestLoadImageFolderFirstError loads files on all cores, yet always reports the first
// bad file in path order.
func TestLoadImageFolderFirstError(t *testing.T) {
	root := t.TempDir()
	good := pngBytes(t, greyImage(2, 2, 1, 2, 3, 4))
	for i := range 40 {
		b := good
		if i == 25 || i == 30 || i == 39 {
			b = []byte("not an image")
		}
		putFile(t, root, fmt.Sprintf("a/f%02d.png", i), b)
	}
	for range 5 {
		_, err := LoadImageFolder("x", root, 2)
		if want := filepath.Join(root, "a", "f25.png"); err == nil || !strings.Contains(err.Error(), want) {
			t.Fatalf("err = %v, want one naming %s", err, want)
		}
	}
}
