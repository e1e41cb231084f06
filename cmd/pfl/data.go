package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"text/tabwriter"

	"pfl/engine/data/fetch"
)

// dataCmd lists the datasets pfl reads and fetches them into the data folder.
func dataCmd(args []string, out io.Writer) error {
	fs := newFlags("data", out)
	from := fs.String("from", "", "get: take the dataset's files from this `FILE|FOLDER|URL` instead of their addresses (checked as any download)")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), `Usage: pfl data list | get <name>... | dir
  list         the datasets pfl reads: which are here, where, and where their checksums come from
  get <name>   fetch datasets into the data folder, resumably, checked against their published
               checksums (a dataset fetched by hand: the steps, then its placed file checked)
  get <name> --from FILE|FOLDER|URL
               take one dataset's files from a copy instead: its file (a dataset of one file), a
               folder holding its files (MNIST's four), or another address; checked the same way
  dir          print the data folder ($`+fetch.RootEnv+`; default <user cache dir>/pfl/data)
Names: `+fetch.Names()+`. $`+fetch.MirrorEnv+`, a folder or base address holding
<name>/<file> or <file> (another machine's data folder serves), is tried before the official
addresses. A config finds a fetched dataset by its kind alone (data.dataset: cifar10) or when the
path it names does not exist (data/cifar-10-binary.tar.gz); data.download: true fetches it when a
run needs it.`)
		fs.PrintDefaults()
	}
	pos, err := parseArgs(fs, args, 1, -1, "pfl data list | get <name>... [--from FILE|FOLDER|URL] | dir")
	if err != nil {
		return err
	}
	if *from != "" && (pos[0] != "get" || len(pos) != 2) {
		return fmt.Errorf("--from gives the files of one dataset: pfl data get <name> --from %s", *from)
	}
	root, err := fetch.Root()
	if err != nil {
		return err
	}
	switch pos[0] {
	case "dir":
		if len(pos) > 1 {
			return fmt.Errorf("pfl data dir takes no arguments")
		}
		fmt.Fprintln(out, root)
		return nil
	case "list":
		if len(pos) > 1 {
			return fmt.Errorf("pfl data list takes no arguments")
		}
		return listData(root, out)
	case "get":
		if len(pos) == 1 {
			return fmt.Errorf("pfl data get: name the datasets to fetch: %s", fetch.Names())
		}
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		for _, name := range pos[1:] {
			if err := getData(ctx, fetch.Options{Root: root, Progress: out, From: *from}, name, out); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("pfl data %s: want list, get or dir", pos[0])
}

// getData fetches one dataset with o and says where it is and how it was checked.
func getData(ctx context.Context, o fetch.Options, name string, out io.Writer) error {
	root := o.Root
	d, ok := fetch.Lookup(name)
	if !ok {
		return fmt.Errorf("no dataset %q; pfl data get takes %s", name, fetch.Names())
	}
	if d.System != "" {
		if _, err := os.Stat(d.System); err == nil {
			fmt.Fprintf(out, "%s: the system's copy in %s is used (data.dataset: %s); nothing to fetch\n", d.Name, d.System, d.Kinds[0])
			return nil
		}
	}
	rec, err := fetch.Get(ctx, d, o)
	if manual := (*fetch.ManualError)(nil); errors.As(err, &manual) {
		fmt.Fprintf(out, "%s\n", manual.Steps)
		return fmt.Errorf("%s is not here yet: it is fetched by hand (steps above)", d.Name)
	}
	if err != nil {
		return err
	}
	where := filepath.Join(fetch.Dir(root, d), d.Path)
	fmt.Fprintf(out, "%s: %s in %s\n", d.Name, d.Title, where)
	for _, f := range rec.Files {
		checked := f.Checked
		if f.Rechecked {
			checked += " when fetched; its SHA-256 checked again now"
		}
		from := ""
		if f.From != "" && !f.Rechecked {
			from = " from " + f.From
		}
		fmt.Fprintf(out, "  %s  %d bytes  MD5 %s  SHA-256 %s  (%s)%s\n", f.Name, f.Size, f.MD5, f.SHA256, checked, from)
	}
	fmt.Fprintf(out, "configs find it as data.dataset: %s (or by a path that does not exist here)\n", d.Kinds[0])
	return nil
}

// listData prints every dataset of the catalog, whether it is here and where.
func listData(root string, out io.Writer) error {
	fmt.Fprintf(out, "data folder: %s ($%s)\n\n", root, fetch.RootEnv)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "name\tdata.dataset\there\tchecksums\t")
	for _, d := range fetch.Catalog {
		here := "missing: pfl data get " + d.Name
		if d.Manual != "" {
			here = "missing: by hand (pfl data get " + d.Name + " prints the steps)"
		}
		if _, ok := fetch.Fetched(root, d); ok {
			here = filepath.Join(fetch.Dir(root, d), d.Path)
		} else if d.System != "" {
			if _, err := os.Stat(d.System); err == nil {
				here = d.System + " (the system's)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", d.Name, strings.Join(d.Kinds, ", "), here, d.Checksums)
	}
	return tw.Flush()
}
