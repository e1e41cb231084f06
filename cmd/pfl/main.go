// Command pfl is pfl's command-line interface: a GPU training engine for personalized
// federated learning of vision transformers.
//
// Usage:
//
//	pfl doctor            describe the native library, torch, devices and threads
//	pfl smoke [flags]     train a small MLP end to end (the check that everything works)
//	pfl models            list the models with parameters by role and FLOPs per sample
//	pfl algorithms        list the federated algorithms with their papers
//	pfl partition [flags] spread a dataset over clients; write manifest and heatmap
//	pfl train [-c cfg]    run a federated experiment (default: the FedTP demo on Fashion-MNIST)
//	pfl eval <run>        evaluate every client's model from a run's last checkpoint
//	pfl plot <run>...     draw several runs' accuracy curves on one figure
//	pfl maps <run>        attention rollout / focal modulation maps from the last checkpoints
//	pfl tsne <run>        t-SNE of a FedTP or TransFed run's client embeddings
//	pfl report <run>      a self-contained HTML report of a run or suite
//	pfl bench <workload>  time a benchmark workload: samples/s, TFLOP/s, MFU, projected run time
//	pfl launch -n N -- train -c cfg   train across N local processes (c10d: Gloo, NCCL)
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
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
	{"algorithms", "list the federated algorithms: what each does and its paper", algorithmsCmd},
	{"train", "run a federated experiment from a config (default: the FedTP demo on Fashion-MNIST)", trainCmd},
	{"eval", "evaluate every client's model from a run's last checkpoint", evalCmd},
	{"plot", "draw the accuracy curves of several runs on one figure", plotCmd},
	{"maps", "draw attention rollout or focal modulation maps of a run's or suite's clients", mapsCmd},
	{"tsne", "draw the t-SNE of a run's (or suite members') client embeddings", tsneCmd},
	{"report", "write a self-contained HTML report of a run or suite (report.html)", reportCmd},
	{"partition", "spread a dataset over clients; write the manifest and label heatmap", partitionCmd},
	{"launch", "start N local processes of a pfl command that train together (torchrun's variables)", launchCmd},
	{"bench", "time a benchmark workload: samples/s, TFLOP/s, MFU, round split, projected run time", benchCmd},
}

// errUsage marks a usage error (exit status 2); its message has been printed.
var errUsage = errors.New("usage")

func usage(out io.Writer) {
	fmt.Fprintln(out, "pfl: personalized federated learning of vision transformers on one GPU")
	fmt.Fprintln(out, "\nUsage: pfl <command> [flags]\n\nCommands:")
	for _, c := range commands {
		fmt.Fprintf(out, "  %-8s %s\n", c.name, c.summary)
	}
	fmt.Fprintln(out, "\nRun 'pfl <command> -h' for a command's flags.")
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, out, errOut io.Writer) int {
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
	return fs
}

// parse parses args for a command that takes no positional arguments, turning a flag
// error into errUsage (the flag package printed it); -h is flag.ErrHelp (exit 0).
func parse(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(fs.Output(), "unexpected arguments: %v\n", fs.Args())
		return errUsage
	}
	return nil
}

// parseArgs parses args for a command that takes between lo and hi positional arguments
// (hi < 0: no limit), printing use on a wrong count; -h is flag.ErrHelp (exit 0), as for
// every command.
func parseArgs(fs *flag.FlagSet, args []string, lo, hi int, use string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() < lo || (hi >= 0 && fs.NArg() > hi) {
		fmt.Fprintln(fs.Output(), "usage:", use)
		return errUsage
	}
	return nil
}
