package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"pfl/engine/rundir"
)

// versionCmd prints pfl's module version and the VCS revision the binary was built from
// (Go stamps it from the git checkout); a binary built without stamping (outside a
// checkout, or with -buildvcs=false) says so, as machine.json records then.
func versionCmd(args []string, out io.Writer) error {
	flags := newFlags("version", out)
	if err := parse(flags, args); err != nil {
		return err
	}
	fmt.Fprintln(out, versionLine())
	return nil
}

// versionLine is "pfl <version> (revision <hash>[+modified], <go version>)".
func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "pfl: no build information in this binary"
	}
	rev := rundir.BuildRevision()
	if rev == "" {
		return fmt.Sprintf("pfl %s (built without VCS stamping: no revision recorded; %s)", bi.Main.Version, bi.GoVersion)
	}
	return fmt.Sprintf("pfl %s (revision %s, %s)", bi.Main.Version, rev, bi.GoVersion)
}
