package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// hosts is two network namespaces joined by a veth pair: two machines on one, each with
// its loopback and one address on the link between them, and a hostname that resolves to
// 127.0.0.1 in both (the namespaces share this machine's /etc/hosts), as on Debian.
type hosts struct {
	ns   [2]string // the namespaces, host i in ns[i]
	dev  [2]string // the ends of the veth pair, dev[i] in ns[i]
	addr [2]string // dev[i]'s address
}

// newHosts makes the two hosts, with names unique to this test run, and removes them when
// the test ends, however it ends. It skips the test where namespaces cannot be made.
func newHosts(t *testing.T) *hosts {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making network namespaces needs root")
	}
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("making network namespaces needs the ip command (iproute2)")
	}
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	id := hex.EncodeToString(b)
	h := &hosts{
		ns:   [2]string{"pfl-" + id + "-0", "pfl-" + id + "-1"},
		dev:  [2]string{"pv" + id + "a", "pv" + id + "b"}, // interface names have at most 15 bytes
		addr: [2]string{"10.77.0.1", "10.77.0.2"},
	}
	ip := func(args ...string) error {
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	t.Cleanup(func() {
		for i := range h.ns {
			ip("netns", "del", h.ns[i]) // takes the veth end inside with it
			ip("link", "del", h.dev[i]) // an end never moved into its namespace
		}
	})
	if err := ip("netns", "add", h.ns[0]); err != nil {
		t.Skipf("cannot make a network namespace here: %v", err)
	}
	if err := ip("link", "add", h.dev[0], "type", "veth", "peer", "name", h.dev[1]); err != nil {
		t.Skipf("cannot make a veth pair here: %v", err)
	}
	steps := [][]string{{"netns", "add", h.ns[1]}}
	for i := range h.ns {
		steps = append(steps,
			[]string{"link", "set", h.dev[i], "netns", h.ns[i]},
			[]string{"-n", h.ns[i], "addr", "add", h.addr[i] + "/24", "dev", h.dev[i]},
			[]string{"-n", h.ns[i], "link", "set", h.dev[i], "up"},
			// a rank reaches its own address through loopback, down in a new namespace
			[]string{"-n", h.ns[i], "link", "set", "lo", "up"})
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			t.Fatal(err)
		}
	}
	return h
}

// cut takes the link between the hosts down (host 1's end, which takes host 0's down too).
func (h *hosts) cut(t *testing.T) {
	t.Helper()
	if out, err := exec.Command("ip", "-n", h.ns[1], "link", "set", h.dev[1], "down").CombinedOutput(); err != nil {
		t.Fatalf("cutting the link: %v: %s", err, out)
	}
}

// rankProc is one rank of pfl running on one of the hosts.
type rankProc struct {
	rank  int
	cmd   *exec.Cmd
	lines chan string // its output, line by line, closed at its end
	mu    sync.Mutex
	log   strings.Builder // every line read so far
	end   chan struct{}   // closed when it has exited; then code and at are set
	code  int
	at    time.Time
}

// start runs pfl with args as rank r of 2 on host r, rank 0's store on host 0's address
// at port, with env added to its environment. The process is killed at the end of the
// test if it still runs (a hang fails the test rather than stopping the suite).
func (h *hosts) start(t *testing.T, r, port int, env []string, args ...string) *rankProc {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", h.ns[r], os.Args[0]}, args...)...)
	cmd.Env = append(childEnvironment(t), fmt.Sprintf("RANK=%d", r), "WORLD_SIZE=2",
		"MASTER_ADDR="+h.addr[0], fmt.Sprintf("MASTER_PORT=%d", port))
	cmd.Env = append(cmd.Env, env...)
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &rankProc{rank: r, cmd: cmd, lines: make(chan string, 10000), end: make(chan struct{})}
	go func() {
		sc := bufio.NewScanner(pipe)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			p.mu.Lock()
			p.log.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			p.lines <- sc.Text()
		}
		close(p.lines)
		err := cmd.Wait()
		p.code, p.at = cmd.ProcessState.ExitCode(), time.Now()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			p.code = -1
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			p.code = -int(ws.Signal())
		}
		close(p.end)
	}()
	return p
}

// output is everything the rank printed so far.
func (p *rankProc) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.log.String()
}

// await reads the rank's output until a line matches re, and fails the test if the rank
// ends or d passes first.
func (p *rankProc) await(t *testing.T, re *regexp.Regexp, d time.Duration) {
	t.Helper()
	deadline := time.After(d)
	for {
		select {
		case l, ok := <-p.lines:
			if !ok {
				<-p.end
				t.Fatalf("rank %d ended (exit %d) before printing %q:\n%s", p.rank, p.code, re, p.output())
			}
			if re.MatchString(l) {
				return
			}
		case <-deadline:
			t.Fatalf("rank %d printed no %q in %v:\n%s", p.rank, re, d, p.output())
		}
	}
}

// wait waits at most d for the rank to exit (draining its output) and returns its exit
// code and the moment it exited; it fails the test when the rank is still running.
func (p *rankProc) wait(t *testing.T, d time.Duration) (int, time.Time) {
	t.Helper()
	go func() {
		for range p.lines {
		}
	}()
	select {
	case <-p.end:
		return p.code, p.at
	case <-time.After(d):
		p.cmd.Process.Kill()
		t.Fatalf("rank %d still running after %v:\n%s", p.rank, d, p.output())
		return 0, time.Time{}
	}
}

// TestAcrossTwoHosts trains across two hosts (network namespaces joined by a veth pair,
// whose hostname resolves to 127.0.0.1 as on Debian: Gloo's device must not sit there):
//   - a run with rank 0 on host 0 and rank 1 on host 1 gives the metrics of the same run
//     in one process, within the tolerances of TestAcrossProcessesMatchesOneProcess, each
//     rank's Gloo device on its end of the link by the default choice (the address that
//     routes to MASTER_ADDR);
//   - the same run, rank 1's device on its end of the link by GLOO_SOCKET_IFNAME, with the
//     link cut after rank 0's first checkpoint: both ranks exit with code 1 within
//     PFL_DIST_TIMEOUT and a few seconds, each naming its lost peer and the variable, and
//     rank 0 keeps its last checkpoint;
//   - that run resumed in one process on this machine ends with the metrics of the run
//     that was never cut.
func TestAcrossTwoHosts(t *testing.T) {
	h := newHosts(t)
	out := t.TempDir()
	cfg := writeDistConfig(t, out)
	// rounds of a few tenths of a second, more of them left after the first checkpoint
	// than the moment it takes to cut the link
	sets := []string{"train.rounds=5", "train.epochs=2"}
	want := distRun(t, out, cfg, 1, append(sets, "name=one")...)
	const timeout = 10 * time.Second
	train := func(name string) []string {
		args := []string{"train", "-c", cfg, "--set", "out=" + out, "--set", "name=" + name}
		for _, s := range sets {
			args = append(args, "--set", s)
		}
		return args
	}
	env := []string{"PFL_DIST_TIMEOUT=" + timeout.String()}

	says := func(r *rankProc, want string) {
		t.Helper()
		if !strings.Contains(r.output(), want) {
			t.Errorf("rank %d does not say %q:\n%s", r.rank, want, r.output())
		}
	}
	byRoute := func(i int) string {
		return fmt.Sprintf("rank %d of 2: Gloo on %s (the address that routes to MASTER_ADDR %s)", i, h.addr[i], h.addr[0])
	}

	// a whole run across the hosts, each rank's Gloo device where its route to rank 0 goes
	r0 := h.start(t, 0, 29500, env, train("two")...)
	r1 := h.start(t, 1, 29500, env, train("two")...)
	for _, r := range []*rankProc{r0, r1} {
		if code, _ := r.wait(t, 3*time.Minute); code != 0 {
			t.Fatalf("rank %d on host %d: exit %d\n%s", r.rank, r.rank, code, r.output())
		}
		says(r, byRoute(r.rank))
	}
	sameMetrics(t, "across two hosts", readMetrics(t, filepath.Join(out, "two")), want)

	// the link cut in the middle of a run, rank 1's device on the interface it is told
	r0 = h.start(t, 0, 29501, env, train("cut")...)
	r1 = h.start(t, 1, 29501, append(env, "GLOO_SOCKET_IFNAME="+h.dev[1]), train("cut")...)
	r0.await(t, regexp.MustCompile(`^checkpoint round 1$`), 3*time.Minute)
	h.cut(t)
	cutAt := time.Now()
	bound := timeout + 8*time.Second // the round in progress, the timeout, the exit
	for _, c := range []struct {
		r    *rankProc
		peer string
	}{{r0, "rank 0 of 2 lost rank 1"}, {r1, "rank 1 of 2 lost rank 0"}} {
		code, at := c.r.wait(t, 2*bound)
		text := c.r.output()
		t.Logf("rank %d exited %v after the cut", c.r.rank, at.Sub(cutAt).Round(time.Millisecond))
		switch {
		case code != 1:
			t.Errorf("rank %d: exit %d after the cut, want 1:\n%s", c.r.rank, code, text)
		case at.Sub(cutAt) > bound:
			t.Errorf("rank %d exited %v after the cut, want at most %v (PFL_DIST_TIMEOUT=%v):\n%s", c.r.rank, at.Sub(cutAt), bound, timeout, text)
		case !strings.Contains(text, c.peer) || !strings.Contains(text, "PFL_DIST_TIMEOUT="+timeout.String()):
			t.Errorf("rank %d's error names neither its lost peer (%q) nor PFL_DIST_TIMEOUT:\n%s", c.r.rank, c.peer, text)
		}
	}
	says(r0, byRoute(0))
	says(r1, "rank 1 of 2: Gloo on interface "+h.dev[1]+" (GLOO_SOCKET_IFNAME)")
	says(r0, "the last checkpoint in "+filepath.Join(out, "cut")+" is kept")
	if _, err := os.Stat(filepath.Join(out, "cut", "checkpoint.safetensors")); err != nil {
		t.Fatalf("rank 0's checkpoint: %v", err)
	}
	if t.Failed() {
		return
	}

	// the cut run resumed in one process
	r := runPFL(t, out, nil, "train", "--resume", filepath.Join(out, "cut"))
	if r.code != 0 || !regexp.MustCompile(`resumed \S+ after round [1-4]\b`).MatchString(r.output) {
		t.Fatalf("resume in one process: exit %d\n%s", r.code, r.output)
	}
	sameMetrics(t, "cut across two hosts, resumed in one process", readMetrics(t, filepath.Join(out, "cut")), want)
}
