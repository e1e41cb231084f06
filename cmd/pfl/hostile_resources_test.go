package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// alive reports whether process pid still runs: it exists and is not a zombie (a rank
// whose launcher died is reparented, and its new parent may be slow to reap it).
func alive(pid int) bool {
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	// the state follows the command name, which is in parentheses
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

// TestLaunchedRanksDieWithTheLauncher kills pfl launch with SIGKILL (it can forward
// nothing) while its ranks are inside a long round, printing nothing (a rank that prints
// to its dead launcher dies of SIGPIPE anyway), and wants every rank gone within seconds.
func TestLaunchedRanksDieWithTheLauncher(t *testing.T) {
	tmp := t.TempDir()
	// rounds of tens of seconds (2 clients × 1,500 images × 20 epochs on one thread each)
	cmd := exec.Command(os.Args[0], "launch", "-n", "2", "--", "train", "-c", filepath.Join(wd(t), "../../configs/quickstart-fmnist.yaml"),
		"--set", "data.dataset=synthetic:6000", "--set", "data.clients=4", "--set", "train.rounds=1000", "--set", "train.epochs=20",
		"--set", "train.participation=0.5", "--set", "out="+tmp, "--set", "name=orphans", "--set", "train.eval_every=0")
	cmd.Env = append(childEnvironment(t), "OMP_NUM_THREADS=1")
	pipe, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	pidRE := regexp.MustCompile(`^\[rank (\d)\] pid (\d+)$`)
	var pids []int
	var log strings.Builder
	sc := bufio.NewScanner(pipe)
	// rank 0's last line before its first round: the ranks train from here on
	for sc.Scan() {
		l := sc.Text()
		log.WriteString(l + "\n")
		if m := pidRE.FindStringSubmatch(l); m != nil {
			pid, _ := strconv.Atoi(m[2])
			pids = append(pids, pid)
		}
		if strings.HasPrefix(l, "[rank 0] cpu: ") {
			break
		}
	}
	if len(pids) != 2 {
		t.Fatalf("want the pids of 2 ranks; output:\n%s", log.String())
	}
	for _, pid := range pids {
		defer syscall.Kill(pid, syscall.SIGKILL) // whatever the test finds, leave nothing running
	}
	time.Sleep(time.Second)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for alive(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("rank pid %d still runs 5 s after its launcher was killed; output:\n%s", pid, log.String())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}
