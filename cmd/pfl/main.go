// Command pfl is pfl's command-line interface: a GPU training engine for personalized
// federated learning of vision transformers.
//
// Usage:
//
//	pfl doctor            describe the native library, torch, devices and threads
//	pfl smoke [flags]     train a small MLP end to end (the check that everything works)
//	pfl models            list the models with parameters by role and FLOPs per sample
//	pfl algorithms        list the federated algorithms with their papers
//	pfl data get <name>   fetch a dataset into the data folder ($PFL_DATA), checked; pfl data list
//	pfl partition [flags] spread a dataset over clients; write manifest and heatmap
//	pfl configs           list the built-in configs (pfl train -c NAME runs one anywhere)
//	pfl train [-c cfg]    run a federated experiment (default: the built-in demo, configs/demo-fmnist.yaml)
//	pfl eval <run>        evaluate every client's model from a run's last checkpoint
//	pfl plot <run>...     draw several runs' accuracy curves on one figure
//	pfl maps <run>        attention rollout / focal modulation maps from the last checkpoints
//	pfl tsne <run>        t-SNE of a FedTP or TransFed run's client embeddings
//	pfl report <run>      a self-contained HTML report of a run or suite
//	pfl export <run>...   the runs' rounds, clients and summaries as CSV tables (pandas, R)
//	pfl bench <workload>  time a benchmark workload: samples/s, TFLOP/s, MFU, projected run time
//	pfl launch -n N -- train -c cfg   train across N local processes (c10d: Gloo, NCCL)
//	pfl version           the version and the revision the binary was built from
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"pfl/configs"
)

// command is one subcommand: it parses its own flags from args and writes to out.
type command struct {
	name, summary string
	run           func(args []string, out io.Writer) error
}

var commands = []command{
	{"doctor", "describe the native library, libtorch, CUDA devices and threads", doctor},
	{"smoke", "train a small MLP on synthetic data end to end", smokeCmd},
	{"models", "list the models: parameters by role, FLOPs per sample", modelsCmd},
	{"algorithms", "list the federated algorithms: what each does and its paper (with a name: its settings and their defaults)", algorithmsCmd},
	{"configs", "list the built-in configs (pfl train -c NAME runs one from any directory)", configsCmd},
	{"train", "run a federated experiment from a config (default: the built-in demo, configs/" + configs.Demo + ")", trainCmd},
	{"eval", "evaluate every client's model from a run's last checkpoint", evalCmd},
	{"plot", "draw the accuracy curves of several runs on one figure", plotCmd},
	{"maps", "draw attention rollout or focal modulation maps of a run's or suite's clients", mapsCmd},
	{"tsne", "draw the t-SNE of a run's (or suite members') client embeddings", tsneCmd},
	{"report", "write a self-contained HTML report of a run or suite (report.html)", reportCmd},
	{"export", "write the rounds, clients and summaries of runs, suites or grids as CSV tables (pandas, R)", exportCmd},
	{"data", "list the datasets pfl reads; fetch them, checked, into the data folder (pfl data get cifar10)", dataCmd},
	{"partition", "spread a dataset over clients; write the manifest and label heatmap", partitionCmd},
	{"launch", "start N local processes of a pfl command that train together (torchrun's variables)", launchCmd},
	{"bench", "time a benchmark workload: samples/s, TFLOP/s, MFU, round split, projected run time", benchCmd},
	{"version", "print pfl's version and the revision it was built from", versionCmd},
}

// errUsage marks a usage error (exit status 2); its message has been printed.
var errUsage = errors.New("usage")

func usage(out io.Writer) {
	fmt.Fprintln(out, "pfl: personalized federated learning of vision transformers on one GPU")
	fmt.Fprintln(out, "\nUsage: pfl <command> [flags]\n\nCommands:")
	col := 0
	for _, c := range commands {
		col = max(col, len(c.name)+4)
	}
	width := termWidth(out)
	for _, c := range commands {
		writeWrapped(out, width, "  "+c.name+strings.Repeat(" ", col-2-len(c.name)), c.summary, col)
	}
	fmt.Fprintln(out)
	writeWrapped(out, width, "", "Run 'pfl <command> -h' for a command's arguments and flags; flags may come before or after the arguments, and -- ends them.", 0)
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, out, errOut io.Writer) int {
	if len(args) > 0 && (args[0] == "--version" || args[0] == "-version") {
		fmt.Fprintln(out, versionLine())
		return 0
	}
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		usage(out)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	for _, c := range commands {
		if c.name != args[0] {
			continue
		}
		err := c.run(args[1:], out)
		switch {
		case err == nil, errors.Is(err, flag.ErrHelp):
			return 0
		case errors.Is(err, errUsage):
			return 2
		default:
			fmt.Fprintln(errOut, "pfl "+c.name+":", err)
			return 1
		}
	}
	fmt.Fprintf(errOut, "pfl: unknown command %q\n\n", args[0])
	usage(errOut)
	return 2
}

// newFlags returns a flag set for a subcommand that reports errors instead of exiting.
func newFlags(name string, out io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("pfl "+name, flag.ContinueOnError)
	fs.SetOutput(out)
	fs.Usage = nil // parse and parseArgs set one naming the positional arguments, unless the command does
	return fs
}

// parse parses args for a command that takes no positional arguments, turning a flag
// error into errUsage (the flag package printed it); -h is flag.ErrHelp (exit 0).
func parse(fs *flag.FlagSet, args []string) error {
	usageLine(fs, strings.TrimPrefix(fs.Name(), "pfl ")+" [flags]")
	pos, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		fmt.Fprintf(fs.Output(), "unexpected arguments: %v\n", pos)
		return errUsage
	}
	return nil
}

// parseArgs parses args for a command that takes between lo and hi positional arguments
// (hi < 0: no limit) and returns them, printing use on a wrong count; flags may come
// before, between or after them (parseFlags). -h prints use and the flags and is
// flag.ErrHelp (exit 0), as for every command.
func parseArgs(fs *flag.FlagSet, args []string, lo, hi int, use string) ([]string, error) {
	usageLine(fs, strings.TrimPrefix(use, "pfl "))
	pos, err := parseFlags(fs, args)
	if err != nil {
		return nil, err
	}
	if len(pos) < lo || (hi >= 0 && len(pos) > hi) {
		fmt.Fprintln(fs.Output(), "usage:", use)
		return nil, errUsage
	}
	return pos, nil
}

// usageLine makes -h print "Usage: pfl <use>" and the flags, unless the command wrote
// its own usage: the flag package's default names only the flags, not the positional
// arguments a command takes.
func usageLine(fs *flag.FlagSet, use string) {
	if fs.Usage != nil {
		return
	}
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: pfl %s\n", use)
		if hasFlags(fs) {
			fmt.Fprintln(fs.Output(), "\nFlags:")
			fs.PrintDefaults()
		}
	}
}

// hasFlags reports whether fs defines any flag.
func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// parseFlags parses args with flags anywhere among the positional arguments, as argparse
// and cobra users expect (pfl maps <dir> -images 2), and returns the positional arguments
// in order; "--" ends the flags, so a positional argument may begin with "-". The flag
// package alone stops at the first positional argument. A flag error is errUsage (the
// flag package printed it), -h flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, err
			}
			return nil, errUsage
		}
		rest := fs.Args()
		if used := len(args) - len(rest); used > 0 && args[used-1] == "--" && !isValue(fs, args[:used-1]) {
			return append(pos, rest...), nil // the flag package consumed "--": the rest is positional
		}
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// isValue reports whether the argument after parsed (the ones the flag package consumed
// before it) is the value of a flag rather than a flag itself: parsed ends in a flag
// that takes a value and was given none with "=" (-out --).
func isValue(fs *flag.FlagSet, parsed []string) bool {
	if len(parsed) == 0 {
		return false
	}
	last := parsed[len(parsed)-1]
	name, ok := strings.CutPrefix(last, "-")
	if !ok || strings.Contains(name, "=") {
		return false
	}
	f := fs.Lookup(strings.TrimPrefix(name, "-"))
	if f == nil {
		return false
	}
	b, isBool := f.Value.(interface{ IsBoolFlag() bool })
	return !isBool || !b.IsBoolFlag()
}
