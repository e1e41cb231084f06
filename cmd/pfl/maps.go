package main

import (
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"pfl/engine/analysis"
	"pfl/engine/experiment"
	"pfl/engine/rundir"
)

// mapsCmd draws attention rollout and focal modulation maps from a run's or a suite's
// last checkpoints.
func mapsCmd(args []string, out io.Writer) error {
	fs := newFlags("maps", out)
	images := fs.Int("images", 4, "test images per client")
	clients := fs.String("clients", "", "comma-separated clients (default: the first four)")
	fusion := fs.String("fusion", "max", "rollout's head fusion: max (FedTP's maps) or mean")
	discard := fs.Float64("discard", 0.3, "fraction of each block's fused attention, the smallest, discarded before rollout")
	side := fs.Int("side", 96, "magnify each image to at least this many pixels")
	pos, err := parseArgs(fs, args, 1, 1, "pfl maps [-images N] [-clients 0,1,...] [-fusion max|mean] [-discard f] [-side px] <run, suite or grid dir>")
	if err != nil {
		return err
	}
	o := experiment.MapOptions{Images: *images, Fusion: analysis.Fusion(*fusion), Discard: discard, Side: *side}
	// every image is drawn side × side pixels, for every client, member and image: the
	// bounds keep a sheet within what an image viewer (and the memory) can hold
	if *images < 1 || *images > experiment.MaxMapImages {
		return fmt.Errorf("-images %d: want 1 to %d test images per client", *images, experiment.MaxMapImages)
	}
	if *side < 1 || *side > experiment.MaxMapSide {
		return fmt.Errorf("-side %d: want 1 to %d pixels per image", *side, experiment.MaxMapSide)
	}
	if *clients != "" {
		for _, f := range strings.Split(*clients, ",") {
			c, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("-clients: %q is not a client number", f)
			}
			o.Clients = append(o.Clients, c)
		}
		if len(o.Clients) > experiment.MaxMapClients {
			return fmt.Errorf("-clients: %d clients, want at most %d (a sheet each)", len(o.Clients), experiment.MaxMapClients)
		}
	}
	dirs := []string{pos[0]} // a run or suite: one sheet per client, a row per member
	if rundir.IsGrid(pos[0]) {
		// a grid: each of its runs, as a run of its own
		runs, err := rundir.Runs(pos[0])
		if err != nil {
			return err
		}
		dirs = nil
		for _, r := range runs {
			dirs = append(dirs, r.Dir)
		}
	}
	for _, dir := range dirs {
		info, err := experiment.Maps(dir, o)
		if err != nil {
			return err
		}
		for _, m := range info.Members {
			if m.Skipped != "" {
				fmt.Fprintf(out, "%s: no maps (%s)\n", m.Name, m.Skipped)
			}
		}
		for _, s := range info.Sheets {
			fmt.Fprintf(out, "wrote %s\n", filepath.Join(dir, "maps", s))
		}
	}
	return nil
}
