package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pfl/cuda"
)

// toyConfig writes a toy experiment (a FedTP and a FedAvg member on synthetic images, a tiny
// ViT, one round) named name under out, with extra YAML lines appended.
func toyConfig(t *testing.T, out, name, extra string) string {
	return writeConfig(t, `name: `+name+`
out: `+out+`
suite: [fedtp, fedavg]
data: {dataset: "synthetic:300", clients: 5, partition: iid}
model: {preset: tiny-vit, depth: 1, patch: 8, dim: 16, heads: 2, head_dim: 8, mlp: 16}
train: {rounds: 1, participation: 0.4}
`+extra)
}

// pfl runs the command line and fails the test unless it exits with code; it returns the
// output.
func pfl(t *testing.T, code int, args ...string) string {
	t.Helper()
	var out, errOut bytes.Buffer
	got := run(args, &out, &errOut)
	text := out.String() + errOut.String()
	if got != code {
		t.Fatalf("pfl %q: exit %d, want %d:\n%s", args, got, code, text)
	}
	return text
}

// TestSuiteAndGridDirectoriesEverywhere: eval, plot, tsne, maps and export take a suite's
// and a grid's directory as they take a run's, and work on each of its runs (eval and plot
// read a suite's config.json as a run's and failed with raw file errors).
func TestSuiteAndGridDirectoriesEverywhere(t *testing.T) {
	tmp := t.TempDir()
	pfl(t, 0, "train", "-c", toyConfig(t, tmp, "s", ""))
	pfl(t, 0, "train", "-c", toyConfig(t, tmp, "g", "seeds: [1, 2]\n"))
	suite, grid := filepath.Join(tmp, "s"), filepath.Join(tmp, "g")
	png := filepath.Join(tmp, "both.png")
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"eval", suite}, []string{filepath.Join(suite, "fedtp") + " after 1 rounds", filepath.Join(suite, "fedavg") + " after 1 rounds"}},
		{[]string{"eval", grid, "-clients"}, []string{filepath.Join(grid, "fedtp", "seed-1") + " after 1 rounds", filepath.Join(grid, "fedavg", "seed-2") + " after 1 rounds", "client   4"}},
		{[]string{"plot", suite, grid, "-out", png}, []string{"wrote " + png}},
		{[]string{"tsne", grid}, []string{filepath.Join(grid, "fedtp", "seed-2", "embeddings_tsne.png")}},
		{[]string{"maps", grid, "-images", "1", "-clients", "0"}, []string{filepath.Join(grid, "fedavg", "seed-2", "maps", "client0.png")}},
	} {
		text := pfl(t, 0, c.args...)
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("pfl %q: output lacks %q:\n%s", c.args, w, text)
			}
		}
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("plot of a suite and a grid: %v", err)
	}
	// export: one table to the standard output, or all three to files
	text := pfl(t, 0, "export", suite, grid, "-kind", "summary")
	for _, w := range []string{"experiment,run,member,algorithm,seed,rounds,", suite + "," + filepath.Join(suite, "fedtp") + ",fedtp,fedtp,1,1,",
		grid + "," + filepath.Join(grid, "fedavg", "seed-2") + ",fedavg,fedavg,2,1,"} {
		if !strings.Contains(text, w) {
			t.Errorf("pfl export -kind summary lacks %q:\n%s", w, text)
		}
	}
	csvOut := filepath.Join(tmp, "results.csv")
	text = pfl(t, 0, "export", suite, grid, "-out", csvOut)
	for _, k := range []string{"rounds", "clients", "summary"} {
		path := filepath.Join(tmp, "results-"+k+".csv")
		b, err := os.ReadFile(path)
		if !strings.Contains(text, "wrote "+path) || err != nil || !strings.HasPrefix(string(b), "experiment,run,member,algorithm,seed,") {
			t.Errorf("pfl export -out: %s (%v)", text, err)
		}
	}
	if text := pfl(t, 1, "export", suite); !strings.Contains(text, "-kind rounds|clients|summary") {
		t.Errorf("pfl export without -kind or -out: %s", text)
	}
	// a member that never saved a checkpoint is named, not evaluated
	if err := os.Remove(filepath.Join(suite, "fedavg", "checkpoint.safetensors")); err != nil {
		t.Fatal(err)
	}
	text = pfl(t, 0, "eval", suite)
	if !strings.Contains(text, filepath.Join(suite, "fedavg")+": no checkpoint yet") || !strings.Contains(text, filepath.Join(suite, "fedtp")+" after 1 rounds") {
		t.Errorf("eval of a suite with a member without a checkpoint:\n%s", text)
	}
}

// TestFailedStartDoesNotBlockARetry: a suite, a grid or a named run that failed while it
// set up (here: a folder of images that is not there, which only loading finds; a missing
// dataset pfl fetches is found before anything is written) leaves nothing that refuses
// the plain retry (the suite and the grid used to leave config.json, which "already holds
// a suite" refused, --resume too); a directory with a round done is still refused, and one
// with a file that is not pfl's is refused naming it.
func TestFailedStartDoesNotBlockARetry(t *testing.T) {
	tmp := t.TempDir()
	missing := "data.dataset=domains:" + filepath.Join(tmp, "no-such")
	for _, c := range []struct {
		name string
		args []string
	}{
		{"suite", []string{"-c", toyConfig(t, tmp, "suite", "")}},
		{"grid", []string{"-c", toyConfig(t, tmp, "grid", "seeds: [1, 2]\n")}},
		{"pick", []string{"-c", toyConfig(t, tmp, "pick", ""), "--set", "suite=[]", "--set", "algorithm.name=fedavg"}},
	} {
		train := append([]string{"train"}, c.args...)
		if text := pfl(t, 1, append(train, "--set", missing)...); !strings.Contains(text, "no-such") {
			t.Fatalf("%s with missing data: %s", c.name, text)
		}
		text := pfl(t, 0, train...)
		if _, err := os.Stat(filepath.Join(tmp, c.name)); err == nil && c.name != "pick" && !strings.Contains(text, "replacing "+filepath.Join(tmp, c.name)) {
			t.Errorf("%s: the retry does not say it replaced the failed start:\n%s", c.name, text)
		}
		// finished, it is kept: a plain start is refused again
		if text := pfl(t, 1, train...); !strings.Contains(text, "already holds") {
			t.Errorf("%s: a second start after a finished one: %s", c.name, text)
		}
	}
	// a failed start with a file of the user's beside it is kept
	user := filepath.Join(tmp, "kept")
	cfg := toyConfig(t, tmp, "kept", "")
	pfl(t, 1, "train", "-c", cfg, "--set", missing)
	if err := os.WriteFile(filepath.Join(user, "notes.txt"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	if text := pfl(t, 1, "train", "-c", cfg); !strings.Contains(text, filepath.Join(user, "notes.txt")+", which pfl did not write") {
		t.Errorf("a failed start holding a file of the user's: %s; want the file named", text)
	}
}

// TestUnavailableDeviceIsRefusedFirst: a CUDA device this build or machine cannot give is
// refused before the data is loaded or the run directory touched (the data here does not
// exist, and is not what the error names), saying how to get a CUDA build.
func TestUnavailableDeviceIsRefusedFirst(t *testing.T) {
	info, err := cuda.Capabilities()
	if err != nil {
		t.Fatal(err)
	}
	device, want := "cuda", "bash bench/gpu.sh"
	if info.HasCUDA {
		device, want = "cuda:99", "CUDA device"
	}
	tmp := t.TempDir()
	cfg := toyConfig(t, tmp, "dev", "")
	text := pfl(t, 1, "train", "-c", cfg, "--set", "device="+device, "--set", "data.dataset=cifar10:"+filepath.Join(tmp, "no-such.tar.gz"))
	if !strings.Contains(text, want) || strings.Contains(text, "no-such") {
		t.Errorf("train on %s: %s; want the device refused first, mentioning %q", device, text, want)
	}
	if entries, _ := os.ReadDir(tmp); len(entries) > 0 {
		t.Errorf("a run refused for its device left %v in its out folder", entries)
	}
}
