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
	"strings"
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
	rs := &ranks{procs: make([]*exec.Cmd, *n), exits: make(chan rankExit, *n), out: out,
		signalled: make([]bool, *n), done: make([]bool, *n)}
	start, stopStarting := starter()
	defer stopStarting()
	for r := range rs.procs {
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
			for _, p := range rs.procs[:r] {
				p.Process.Kill()
			}
			return fmt.Errorf("starting rank %d: %w", r, err)
		}
		rs.procs[r] = c
		rs.mu.Lock()
		fmt.Fprintf(out, "[rank %d] pid %d\n", r, c.Process.Pid)
		rs.mu.Unlock()
		rs.pipes.Add(1)
		go rs.forward(r, pr)
		go func() {
			err := c.Wait()
			rs.mu.Lock()
			early := !rs.sent
			rs.mu.Unlock()
			pw.Close()
			rs.exits <- rankExit{rank: r, err: err, early: early}
		}()
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	return rs.wait(sigs)
}

// ranks are the processes of one pfl launch and what launch knows of them.
type ranks struct {
	procs []*exec.Cmd
	exits chan rankExit
	pipes sync.WaitGroup // the goroutines forwarding the ranks' output
	out   io.Writer
	mu    sync.Mutex // one line at a time on out; guards signalled and sent
	// signalled[r]: rank r said a signal stopped it before launch signalled any rank (a
	// SIGTERM sent to it alone); sent: launch has signalled the ranks
	signalled []bool
	sent      bool
	done      []bool // the ranks that have ended (wait's own)
}

// forward copies rank r's output (pr) to out line by line, prefixed by the rank, noting
// the line by which the rank says a signal stops it.
func (rs *ranks) forward(r int, pr *io.PipeReader) {
	defer rs.pipes.Done()
	sc := bufio.NewScanner(pr)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		rs.mu.Lock()
		line := sc.Text()
		fmt.Fprintf(rs.out, "[rank %d] %s\n", r, line)
		if !rs.sent && strings.HasPrefix(line, "pfl: ") && strings.Contains(line, stoppingNotice) {
			rs.signalled[r] = true
		}
		rs.mu.Unlock()
	}
	io.Copy(io.Discard, pr) // a line over 1 MiB: drop the rest rather than block the rank
}

// signalAll sends sig to every rank still running, and with kill kills each launchGrace
// later.
func (rs *ranks) signalAll(sig os.Signal, kill bool) {
	rs.mu.Lock()
	rs.sent = true
	rs.mu.Unlock()
	for r, c := range rs.procs {
		if !rs.done[r] {
			c.Process.Signal(sig)
			if kill {
				time.AfterFunc(launchGrace, func() { c.Process.Kill() })
			}
		}
	}
}

// wait waits for every rank to end, forwarding launch's own signals (sigs) to them: the
// ranks end in any order, and the first failure stops the others. The error names the
// rank to blame (culprit).
func (rs *ranks) wait(sigs <-chan os.Signal) error {
	var failures []rankExit // in the order the ranks ended
	interrupted := false
	for left := len(rs.procs); left > 0; {
		var e rankExit
		select {
		case sig := <-sigs:
			interrupted = true
			rs.signalAll(sig, false)
			continue
		case e = <-rs.exits:
			left--
		}
		rs.done[e.rank] = true
		if e.err == nil {
			continue
		}
		failures = append(failures, e)
		if len(failures) > 1 || interrupted {
			// After an interrupt, a rank that stops on it exits with an error; the others got
			// the same signal and stop after their round in progress. A SIGTERM now would be
			// their second signal, which stops them at once: rank 0 before it says where it
			// stopped.
			continue
		}
		rs.signalAll(syscall.SIGTERM, true)
	}
	rs.pipes.Wait()
	switch {
	case len(failures) > 0 && interrupted:
		return fmt.Errorf("interrupted: the ranks stopped (their output says after which round)")
	case len(failures) > 0:
		return culprit(failures, rs.signalled, len(rs.procs))
	}
	return nil
}

// rankExit is how a rank of pfl launch ended: err nil for success; early when it ended
// before launch signalled any rank (so not because launch stopped it).
type rankExit struct {
	rank  int
	err   error
	early bool
}

// culprit is launch's error for ranks that failed (in the order they ended) among n: it
// names the rank that caused the others to stop, not the first to end. A rank that a
// signal of its own stopped (signalled: it said so) stops every rank after the same
// round, and whichever ends first, the signal's rank is the one to name; then a rank a
// signal killed (SIGKILL: the others fail in their next collective); else the first.
func culprit(failures []rankExit, signalled []bool, n int) error {
	for _, e := range failures {
		if signalled[e.rank] { // before launch signalled anyone, so not launch's signal
			return fmt.Errorf("rank %d of %d was stopped by a signal sent to it; the other ranks stopped with it after the same round (rank 0's output says how to continue)", e.rank, n)
		}
	}
	blame := failures[0]
	for _, e := range failures {
		if e.early && killedBySignal(e.err) {
			blame = e
			break
		}
	}
	return fmt.Errorf("rank %d of %d failed (%v); the other ranks were stopped", blame.rank, n, blame.err)
}

// killedBySignal reports whether err is the exit error of a process a signal killed.
func killedBySignal(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled()
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
