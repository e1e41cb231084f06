package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"pfl/engine/report"
)

// exportCmd writes the results of runs, suites and grids as CSV tables for pandas or R:
// one table per kind (rounds, clients, summary), each row naming its run's algorithm,
// seed, suite member and sweep point.
func exportCmd(args []string, out io.Writer) error {
	fs := newFlags("export", out)
	kind := fs.String("kind", "", "the one table to write: "+strings.Join(report.CSVKinds, ", ")+" (default: all three, which need -out)")
	path := fs.String("out", "", "the CSV `file` to write (with every table: FILE-rounds.csv, FILE-clients.csv, FILE-summary.csv); default: the standard output, for one -kind")
	dirs, err := parseArgs(fs, args, 1, -1, "pfl export [-kind rounds|clients|summary] [-out FILE.csv] <run, suite or grid dir>...")
	if err != nil {
		return err
	}
	if *kind == "" && *path == "" {
		return fmt.Errorf("name one table with -kind %s to print it, or give -out FILE.csv to write all three (FILE-rounds.csv, FILE-clients.csv, FILE-summary.csv)", strings.Join(report.CSVKinds, "|"))
	}
	if *path == "" {
		notes, err := report.ExportCSV(out, *kind, dirs)
		for _, n := range notes {
			fmt.Fprintln(os.Stderr, "pfl export:", n) // the standard output holds the table
		}
		return err
	}
	kinds, files := []string{*kind}, []string{*path}
	if *kind == "" {
		kinds, files = report.CSVKinds, nil
		stem := strings.TrimSuffix(*path, filepath.Ext(*path))
		for _, k := range kinds {
			files = append(files, stem+"-"+k+".csv")
		}
	}
	printed := map[string]bool{}
	for i, k := range kinds {
		notes, err := report.WriteCSV(files[i], k, dirs)
		if err != nil {
			return err
		}
		for _, n := range notes {
			if !printed[n] { // a run that never started is left out of every table
				fmt.Fprintln(out, n)
				printed[n] = true
			}
		}
		fmt.Fprintf(out, "wrote %s\n", files[i])
	}
	return nil
}
