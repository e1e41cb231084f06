package main

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"pfl/engine/data/fetch"
	"pfl/internal/testenv"
)

// fetchIdleEnv sets fetch.IdleLimit in a child pfl (a duration), so that a stalled server
// is given up on in a second rather than a minute.
const fetchIdleEnv = "PFL_TEST_FETCH_IDLE"

func init() {
	if os.Getenv(childEnv) != "1" {
		return
	}
	if d, err := time.ParseDuration(os.Getenv(fetchIdleEnv)); err == nil {
		fetch.IdleLimit = d
	}
}

// proxy is a loopback HTTP proxy standing in for every server of the catalog: a child pfl
// with http_proxy and https_proxy pointing at it asks it for the catalog's official
// addresses (GET for http://, CONNECT for https://, which it refuses), so that nothing
// leaves the machine. Each GET is answered by the mode's misbehaviour.
type proxy struct {
	*httptest.Server
	mu       sync.Mutex
	mode     string // "stall": 1,000 bytes of the announced file, then nothing; "endless": zeros without end
	requests []string
	done     chan struct{}
}

func newProxy(t *testing.T, mode string) *proxy {
	p := &proxy{mode: mode, done: make(chan struct{})}
	p.Server = httptest.NewServer(http.HandlerFunc(p.serve))
	t.Cleanup(func() {
		close(p.done) // a stalled answer ends, so that Close does not wait for it
		p.Close()
	})
	return p
}

func (p *proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.mu.Lock()
	p.requests = append(p.requests, r.Method+" "+r.URL.String())
	p.mu.Unlock()
	if r.Method == http.MethodConnect {
		http.Error(w, "no tunnels here", http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "application/octet-stream")
	switch p.mode {
	case "stall":
		size := int64(10 << 20)
		if f, ok := catalogFile(r.URL.String()); ok {
			size = f.Size
		}
		w.Header().Set("Content-Length", strconv.FormatInt(size, 10))
		w.WriteHeader(http.StatusOK)
		w.Write(make([]byte, 1000))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-p.done:
		}
	case "endless":
		w.WriteHeader(http.StatusOK)
		zeros := make([]byte, 64<<10)
		for {
			if _, err := w.Write(zeros); err != nil {
				return
			}
		}
	}
}

// seen is the requests the proxy had.
func (p *proxy) seen() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.requests...)
}

// env points a child's downloads at the proxy and its data folder at store, with a
// stalled server given up on after idle.
func (p *proxy) env(store string, idle time.Duration) []string {
	return []string{fetch.RootEnv + "=" + store, "http_proxy=" + p.URL, "HTTP_PROXY=" + p.URL, "https_proxy=" + p.URL, "HTTPS_PROXY=" + p.URL,
		"no_proxy=", "NO_PROXY=", fetchIdleEnv + "=" + idle.String()}
}

// catalogFile is the catalog's file at address u.
func catalogFile(u string) (fetch.File, bool) {
	for _, d := range fetch.Catalog {
		for _, f := range d.Files {
			if slices.Contains(f.URLs, u) {
				return f, true
			}
		}
	}
	return fetch.File{}, false
}

// gzipped compresses b.
func gzipped(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// gzipZeros is a gzip stream of gib GiB of zeros, as members of 16 MiB each (a reader
// takes concatenated members as one stream): a few MB that are cheap to build.
func gzipZeros(gib int) []byte {
	zeros := gzipped(make([]byte, 16<<20))
	var out []byte
	for range gib * 64 {
		out = append(out, zeros...)
	}
	return out
}

// idxFile is a gzipped IDX file of uint8 data with these dimensions, followed by gib GiB of
// zeros.
func idxFile(dims []int, data []byte, gib int) []byte {
	b := []byte{0, 0, 8, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, uint32(d))
	}
	return append(gzipped(append(b, data...)), gzipZeros(gib)...)
}

// TestHostileDataIsHandled runs pfl data get and a dry run against a stalled server, a
// download that never ends, a full disk, a dataset changed since it was fetched and
// gzip bombs, and wants each to end within seconds with a clean exit whose message names
// the file; only a transfer cut short suggests resuming; the files pfl did not write are
// byte for byte unchanged.
func TestHostileDataIsHandled(t *testing.T) {
	tmp := t.TempDir()
	write := func(p string, b []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// a fetched MNIST: four files and the record of their SHA-256s
	fetched := func(store string) {
		rec := fetch.Record{Dataset: "mnist"}
		for i, f := range mustLookup(t, "mnist").Files {
			b := bytes.Repeat([]byte{byte(i)}, 100+i)
			write(filepath.Join(store, "mnist", f.Name), b)
			sum := sha256.Sum256(b)
			rec.Files = append(rec.Files, fetch.FileRecord{Name: f.Name, Size: int64(len(b)), SHA256: hex.EncodeToString(sum[:]), Checked: "published MD5"})
		}
		b, _ := json.Marshal(rec)
		write(filepath.Join(store, "mnist", "pfl-data.json"), b)
	}
	small := func(n int) []byte { return idxFile([]int{n, 28, 28}, make([]byte, n*784), 0) }
	labels := func(n int) []byte { return idxFile([]int{n}, make([]byte, n), 0) }
	bombs := func(dir string, images []byte) {
		write(filepath.Join(dir, "train-images-idx3-ubyte.gz"), images)
		write(filepath.Join(dir, "train-labels-idx1-ubyte.gz"), labels(100))
		write(filepath.Join(dir, "t10k-images-idx3-ubyte.gz"), small(20))
		write(filepath.Join(dir, "t10k-labels-idx1-ubyte.gz"), labels(20))
	}
	dryRun := []string{"train", "-c", filepath.Join(wd(t), "../../configs/quickstart-fmnist.yaml"), "--dry-run",
		"--set", "data.dataset=fashion-mnist:{store}/bomb", "--set", "data.clients=4", "--set", "out=" + filepath.Join(tmp, "runs")}
	get := []string{"data", "get", "mnist"}
	for _, c := range []dataCase{
		{"a server that stalls after its headers", "stall", nil, get, 1,
			[]string{"sent nothing for 2s", "{store}/mnist/train-images-idx3-ubyte.gz.part"}, true},
		{"a download that never ends", "endless", nil, get, 1,
			[]string{"more than the 9912422 bytes train-images-idx3-ubyte.gz has", "removed"}, false},
		{"a full disk", "stall",
			func(s string) string { // /dev/full answers every write with ENOSPC
				if err := os.MkdirAll(filepath.Join(s, "mnist"), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink("/dev/full", filepath.Join(s, "mnist", "train-images-idx3-ubyte.gz.part")); err != nil {
					t.Fatal(err)
				}
				return ""
			}, get, 1, []string{"disk holding {store}/mnist is full", "train-images-idx3-ubyte.gz"}, false},
		{"a fetched dataset, unchanged", "stall", func(s string) string { fetched(s); return filepath.Join(s, "mnist") }, get, 0,
			[]string{"SHA-256 checked again now"}, false},
		{"a fetched archive changed since", "stall",
			func(s string) string {
				fetched(s)
				write(filepath.Join(s, "mnist", "train-images-idx3-ubyte.gz"), []byte("changed by hand"))
				return filepath.Join(s, "mnist")
			}, get, 1, []string{"{store}/mnist/train-images-idx3-ubyte.gz changed since it was fetched", "pfl data get mnist"}, false},
		{"4 GiB of zeros, gzipped, as IDX images", "stall",
			func(s string) string { bombs(filepath.Join(s, "bomb"), gzipZeros(4)); return filepath.Join(s, "bomb") }, dryRun, 1,
			[]string{"{store}/bomb/train-images-idx3-ubyte.gz", "type byte 0x00"}, false},
		{"IDX images followed by 4 GiB of zeros", "stall",
			func(s string) string {
				bombs(filepath.Join(s, "bomb"), idxFile([]int{100, 28, 28}, make([]byte, 100*784), 4))
				return filepath.Join(s, "bomb")
			}, dryRun, 1, []string{"{store}/bomb/train-images-idx3-ubyte.gz", "declare 78400 data bytes, file holds more than"}, false},
	} {
		t.Run(c.name, func(t *testing.T) { c.check(t, tmp) })
	}
}

// dataCase is one hostile source of data: the proxy's mode, the data folder as it finds
// it, the command run against them and what its output must say.
type dataCase struct {
	name    string
	mode    string                    // the proxy's
	setup   func(store string) string // prepares the data folder; returns the folder whose files must stay as they are ("": none)
	args    []string                  // {store} is the data folder
	code    int
	mention []string // {store} is the data folder
	resume  bool     // the message suggests resuming
}

// check runs the case's command (tmp: the test's folder) and checks its exit, its message,
// its time, the addresses asked and the files kept.
func (c dataCase) check(t *testing.T, tmp string) {
	store := t.TempDir()
	kept := ""
	if c.setup != nil {
		kept = c.setup(store)
	}
	var before map[string][]byte
	if kept != "" {
		before = testenv.Snapshot(t, kept)
	}
	p := newProxy(t, c.mode)
	start := time.Now()
	fill := func(in []string) []string {
		out := make([]string, len(in))
		for i, a := range in {
			out[i] = strings.ReplaceAll(a, "{store}", store)
		}
		return out
	}
	r := runPFL(t, tmp, p.env(store, 2*time.Second), fill(c.args)...)
	took := time.Since(start)
	t.Logf("exit %d in %v:\n%s", r.code, took.Round(time.Millisecond), r.output)
	if r.code != c.code {
		t.Fatalf("exit %d, want %d:\n%s", r.code, c.code, r.output)
	}
	for _, m := range fill(c.mention) {
		if !strings.Contains(r.output, m) {
			t.Errorf("the output does not name %q:\n%s", m, r.output)
		}
	}
	if got := strings.Contains(r.output, "resume"); got != c.resume {
		t.Errorf("suggests resuming: %v, want %v:\n%s", got, c.resume, r.output)
	}
	if took > 30*time.Second {
		t.Errorf("took %v; want seconds", took)
	}
	for _, req := range p.seen() {
		if !strings.Contains(req, "yann.lecun.com") && !strings.Contains(req, "ossci-datasets") {
			t.Errorf("the proxy was asked for %s, no address of MNIST's", req)
		}
	}
	if kept != "" {
		after := testenv.Snapshot(t, kept)
		delete(after, filepath.Join(kept, ".pfl-data.lock")) // pfl's own, holding nothing
		testenv.SameFiles(t, before, after)
		if n := len(p.seen()); n != 0 {
			t.Errorf("%d requests; want none", n)
		}
	}
}

// child is a pfl process whose output the test reads as it comes.
type child struct {
	cmd  *exec.Cmd
	out  *syncOutput
	done chan struct{}
}

// syncOutput collects a child's output for a reader in another goroutine.
type syncOutput struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncOutput) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncOutput) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// startPFL starts pfl with extra environment variables; the test's end kills it if it
// still runs.
func startPFL(t *testing.T, dir string, env []string, args ...string) *child {
	t.Helper()
	c := &child{cmd: exec.Command(os.Args[0], args...), out: &syncOutput{}, done: make(chan struct{})}
	c.cmd.Dir = dir
	c.cmd.Env = append(childEnvironment(t), env...)
	c.cmd.Stdout, c.cmd.Stderr = c.out, c.out
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		c.cmd.Wait()
		close(c.done)
	}()
	t.Cleanup(func() {
		c.cmd.Process.Kill()
		<-c.done
	})
	return c
}

// waitFor waits until the child's output holds s, for at most a minute (a bound against
// a hang only: the output comes within a second or two).
func (c *child) waitFor(t *testing.T, s string) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !strings.Contains(c.out.String(), s); time.Sleep(20 * time.Millisecond) {
		select {
		case <-c.done:
			t.Fatalf("pfl %v exited before writing %q:\n%s", c.cmd.Args[1:], s, c.out.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("pfl %v did not write %q in a minute:\n%s", c.cmd.Args[1:], s, c.out.String())
		}
	}
}

// stop sends sig and wants the child to exit within 30 s with exit code 1, not killed by
// the signal; it returns the output.
func (c *child) stop(t *testing.T, sig os.Signal) string {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("pfl %v still runs 30 s after %v:\n%s", c.cmd.Args[1:], sig, c.out.String())
	}
	text := c.out.String()
	if ws, ok := c.cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("pfl %v died of %v:\n%s", c.cmd.Args[1:], ws.Signal(), text)
	}
	if code := c.cmd.ProcessState.ExitCode(); code != 1 || strings.Contains(text, "panic:") {
		t.Fatalf("pfl %v: exit %d after %v, want 1:\n%s", c.cmd.Args[1:], code, sig, text)
	}
	return text
}

// TestDataFetchStopsOnSignal: a pfl data get stalled on a server (a loopback proxy that
// stops sending after its headers) holds MNIST's lock; a second pfl data get, and a run
// with data.download, wait for it, saying so, and each stops within seconds of Ctrl-C or
// SIGTERM, naming the lock; the stalled fetch stops on SIGTERM too, keeping its bytes to
// resume from.
func TestDataFetchStopsOnSignal(t *testing.T) {
	tmp := t.TempDir()
	store := filepath.Join(tmp, "store")
	p := newProxy(t, "stall")
	env := p.env(store, time.Hour) // the stall lasts until a signal ends it
	first := startPFL(t, tmp, env, "data", "get", "mnist")
	first.waitFor(t, "fetching train-images-idx3-ubyte.gz from http://yann.lecun.com/")
	lock := filepath.Join(store, "mnist", ".pfl-data.lock")
	for _, c := range []struct {
		name string
		sig  os.Signal
		args []string
		want string
	}{
		{"pfl data get, Ctrl-C", os.Interrupt, []string{"data", "get", "mnist"}, "interrupted while waiting for another pfl fetching it (it holds " + lock + ")"},
		{"pfl data get, SIGTERM", syscall.SIGTERM, []string{"data", "get", "mnist"}, "interrupted while waiting for another pfl fetching it (it holds " + lock + ")"},
		{"a run with data.download, SIGTERM", syscall.SIGTERM, []string{"train", "-c", filepath.Join(wd(t), "../../configs/quickstart-fmnist.yaml"),
			"--set", "data.dataset=mnist", "--set", "data.download=true", "--set", "data.clients=4", "--set", "out=" + tmp, "--set", "name=dl"},
			"interrupted while waiting for another pfl fetching it"},
	} {
		t.Run(c.name, func(t *testing.T) {
			second := startPFL(t, tmp, env, c.args...)
			second.waitFor(t, "waiting for another pfl fetching mnist (it holds "+lock+")")
			signalled := time.Now()
			text := second.stop(t, c.sig)
			t.Logf("stopped %v after %v:\n%s", time.Since(signalled).Round(time.Millisecond), c.sig, text)
			if !strings.Contains(text, c.want) {
				t.Fatalf("after %v:\n%s\nwant %q", c.sig, text, c.want)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(tmp, "dl")); !os.IsNotExist(err) {
		t.Errorf("the interrupted run left its folder (%v)", err)
	}
	text := first.stop(t, syscall.SIGTERM)
	t.Logf("the stalled fetch after SIGTERM:\n%s", text)
	if want := "resume after the 1.0 kB in " + filepath.Join(store, "mnist", "train-images-idx3-ubyte.gz.part"); !strings.Contains(text, "interrupted") || !strings.Contains(text, want) {
		t.Fatalf("the stalled fetch after SIGTERM:\n%s\nwant it interrupted and %q", text, want)
	}
}
