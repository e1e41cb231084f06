package main

import (
	"fmt"
	"io"

	"pfl/engine/experiment"
)

// plotCmd draws the accuracy curves of several runs on one figure.
func plotCmd(args []string, out io.Writer) error {
	fs := newFlags("plot", out)
	path := fs.String("out", "accuracy.png", "output file (.png or .svg)")
	dirs, err := parseArgs(fs, args, 1, -1, "pfl plot [-out file.png] <run dir>...")
	if err != nil {
		return err
	}
	if err := experiment.Compare(*path, dirs); err != nil {
		return err
	}
	fmt.Fprintf(out, "wrote %s\n", *path)
	return nil
}
