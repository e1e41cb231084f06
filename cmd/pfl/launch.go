package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	"pfl/engine/dist"
)

// launchGrace is how long launch waits for the other ranks to stop after SIGTERM (they
// finish nothing: their next collective fails at once, the dead rank's sockets being
// closed) before it kills them.
const launchGrace = 20 * time.Second

// launchCmd starts n local processes of pfl with torchrun's variables set, as torchrun
// --standalone --nproc-per-node n does: their output is forwarded line by line prefixed by
// the rank, and when one fails the others are stopped and launch fails naming it.
func launchCmd(args []string, out io.Writer) error {
	fs := newFlags("launch", out)
	n := fs.Int("n", 2, "number of processes (ranks) on this machine")
	port := fs.Int("port", 0, "MASTER_PORT of rank 0's store on 127.0.0.1; 0: a free port")
	threads := fs.Int("threads", 1, "OMP_NUM_THREADS of each process (intra-op threads on the CPU), unless the environment sets it; 0: leave it")
	force := fs.Bool("force", false, "start more ranks than this machine has CPUs")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: pfl launch [-n N] [--port P] [--threads T] -- <pfl command and flags>, e.g. pfl launch -n 2 -- train -c cfg.yaml")
		fmt.Fprintln(fs.Output(), "Every process gets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT; on CUDA rank r uses GPU LOCAL_RANK.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	rest := fs.Args() // after "--": the command every rank runs
	if len(rest) == 0 {
		return fmt.Errorf("no command to run; e.g. pfl launch -n %d -- train -c cfg.yaml", *n)
	}
	if *n < 1 {
		return fmt.Errorf("-n %d, want >= 1", *n)
	}
	// every rank holds its own copy of the data and models and at least one busy thread:
	// more ranks than CPUs only slow each other down (and exhaust the memory)
	if cpus := runtime.NumCPU(); *n > cpus && !*force {
		return fmt.Errorf("-n %d: more ranks than the %d CPUs of this machine; use -n %d or less, or -force to start them anyway", *n, cpus, cpus)
	}
	if *port < 0 || *port > 65535 {
		return fmt.Errorf("--port %d out of range", *port)
	}
	if *threads < 0 {
		return fmt.Errorf("--threads %d: want >= 1, or 0 to leave OMP_NUM_THREADS to the environment", *threads)
	}
	if *port == 0 {
		p, err := freePort()
		if err != nil {
			return fmt.Errorf("finding a free port: %w", err)
		}
		*port = p
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	type exit struct {
		rank int
		err  error
	}
	exits := make(chan exit, *n)
	var mu sync.Mutex // one line at a time on out
	procs := make([]*exec.Cmd, *n)
	var pipes sync.WaitGroup
	start, stopStarting := starter()
	defer stopStarting()
	for r := range procs {
		c := exec.Command(exe, rest...)
		c.Env = append(os.Environ(),
			dist.EnvRank+"="+strconv.Itoa(r), dist.EnvWorldSize+"="+strconv.Itoa(*n),
			dist.EnvLocalRank+"="+strconv.Itoa(r), dist.EnvMasterAddr+"=127.0.0.1",
			dist.EnvMasterPort+"="+strconv.Itoa(*port))
		if _, set := os.LookupEnv("OMP_NUM_THREADS"); !set && *threads > 0 {
			c.Env = append(c.Env, "OMP_NUM_THREADS="+strconv.Itoa(*threads))
		}
		pr, pw := io.Pipe()
		c.Stdout, c.Stderr = pw, pw
		// Its own process group: a Ctrl-C in the terminal reaches launch alone, which
		// forwards it once to every rank (a rank takes a second signal as "stop now").
		// Pdeathsig: a launch that is killed (SIGKILL, no chance to forward anything) takes
		// its ranks with it, instead of leaving them training with nobody reading them.
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
		if err := start(c); err != nil {
			for _, p := range procs[:r] {
				p.Process.Kill()
			}
			return fmt.Errorf("starting rank %d: %w", r, err)
		}
		procs[r] = c
		mu.Lock()
		fmt.Fprintf(out, "[rank %d] pid %d\n", r, c.Process.Pid)
		mu.Unlock()
		pipes.Add(1)
		go func() {
			defer pipes.Done()
			sc := bufio.NewScanner(pr)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				mu.Lock()
				fmt.Fprintf(out, "[rank %d] %s\n", r, sc.Text())
				mu.Unlock()
			}
			io.Copy(io.Discard, pr) // a line over 1 MiB: drop the rest rather than block the rank
		}()
		go func() {
			err := c.Wait()
			pw.Close()
			exits <- exit{r, err}
		}()
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	// The ranks end in any order; the first failure stops the others.
	done := make([]bool, *n)
	var failed *exit
	interrupted := false
	for left := len(procs); left > 0; {
		var e exit
		select {
		case sig := <-sigs:
			interrupted = true
			for r, c := range procs {
				if !done[r] {
					c.Process.Signal(sig)
				}
			}
			continue
		case e = <-exits:
			left--
		}
		done[e.rank] = true
		if e.err == nil || failed != nil {
			continue
		}
		failed = &e
		if interrupted {
			// A rank that stops on the interrupt exits with an error; the others got the same
			// signal and stop after their round in progress. A SIGTERM now would be their
			// second signal, which stops them at once: rank 0 before it says where it stopped.
			continue
		}
		for r, c := range procs {
			if !done[r] {
				c.Process.Signal(syscall.SIGTERM)
				time.AfterFunc(launchGrace, func() { c.Process.Kill() })
			}
		}
	}
	pipes.Wait()
	if failed != nil && interrupted {
		return fmt.Errorf("interrupted: the ranks stopped (their output says after which round)")
	}
	if failed != nil {
		return fmt.Errorf("rank %d of %d failed (%v); the other ranks were stopped", failed.rank, *n, failed.err)
	}
	return nil
}

// starter returns a function that starts commands from one OS thread, and a function that
// ends that thread, to be called once the commands have exited. Linux sends a child's
// Pdeathsig when the thread that forked it exits, not the process: Go ends threads under
// the launcher (a goroutine locked to a thread ends its thread), so the ranks are forked
// from a thread held for as long as they run.
func starter() (start func(*exec.Cmd) error, stop func()) {
	reqs := make(chan *exec.Cmd)
	errs := make(chan error)
	done := make(chan struct{})
	go func() {
		runtime.LockOSThread() // never unlocked: the thread exits with this goroutine
		for {
			select {
			case c := <-reqs:
				errs <- c.Start()
			case <-done:
				return
			}
		}
	}()
	start = func(c *exec.Cmd) error {
		reqs <- c
		return <-errs
	}
	return start, func() { close(done) }
}

// freePort asks the kernel for a free TCP port on loopback (free now; rank 0 binds it a
// moment later, as torchrun's standalone mode does).
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
