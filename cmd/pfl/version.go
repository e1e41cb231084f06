package main

import (
	"fmt"
	"io"
	"runtime/debug"
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

// versionLine is "pfl <version> (revision <hash>[+modified], <time>, <go version>)".
func versionLine() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "pfl: no build information in this binary"
	}
	var rev, when string
	modified := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			modified = s.Value == "true"
		}
	}
	if rev == "" {
		return fmt.Sprintf("pfl %s (built without VCS stamping: no revision recorded; %s)", bi.Main.Version, bi.GoVersion)
	}
	if modified {
		rev += "+modified"
	}
	return fmt.Sprintf("pfl %s (revision %s, %s, %s)", bi.Main.Version, rev, when, bi.GoVersion)
}
