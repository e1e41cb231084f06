package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"pfl/engine/safetensors"
	"pfl/internal/testenv"
)

// TestHostileValuesAreRefusedClearly feeds the command values that used to be replaced
// silently (a size of 0, an empty --set, an unknown PFL_* variable, an empty seeds list, a
// hollow config.json) or refused with unclear messages (a fraction blamed on the file, a
// negative seed in Go's words, an edited checkpoint history, a NaN embedding) and wants a
// clean exit whose message names the key, flag, variable or file and what is wrong; a
// finished run in the same folder must come out of all of it byte for byte unchanged, and
// no refused run may leave a run directory.
func TestHostileValuesAreRefusedClearly(t *testing.T) {
	tmp := t.TempDir()
	small := []string{"--set", "data.dataset=synthetic:300", "--set", "data.clients=4", "--set", "train.rounds=2",
		"--set", "train.participation=0.5", "--set", "train.eval_every=1", "--set", "out=" + tmp}
	quick := append([]string{"train", "-c", filepath.Join(wd(t), "../../configs/quickstart-fmnist.yaml")}, small...)
	with := func(extra ...string) []string { return append(append([]string{}, quick...), extra...) }
	tinyViT := func(extra ...string) []string {
		return with(append([]string{"--set", "name=a", "--set", "model.preset=tiny-vit", "--set", "model.patch=8"}, extra...)...)
	}
	// the variables pfl reads for purposes of its own are not config keys, and not errors
	own := []string{"PFL_DIST_TIMEOUT=5m", "PFL_LEAK_LOG=0", "PFL_TEST_CHILD_OTHER=1"}
	if r := runPFL(t, tmp, own, with("--set", "name=base")...); r.code != 0 {
		t.Fatalf("the reference run failed:\n%s", r.output)
	}
	base := filepath.Join(tmp, "base")
	before := testenv.Snapshot(t, base)
	f := hostileFiles(t, tmp, base)
	hollow, edited, nanEmb, oneEmb := f.hollow, f.edited, f.nanEmb, f.oneEmb
	sweepZero, noSeeds, negativeSeed, noValue := f.sweepZero, f.noSeeds, f.negativeSeed, f.noValue
	for _, c := range []struct {
		name    string
		env     []string
		args    []string
		code    int
		mention string
		absent  string // what the output must not say ("" for nothing)
	}{
		// a size of 0 would build the preset's size while config.json records 0
		{"depth 0", nil, tinyViT("--set", "model.depth=0"), 1, "model.depth: 0, want >= 1", ""},
		{"heads 0", nil, tinyViT("--set", "model.heads=0"), 1, "model.heads: 0, want >= 1", ""},
		{"patch 0", nil, tinyViT("--set", "model.patch=0"), 1, "model.patch: 0, want >= 1", ""},
		{"a sweep through depth 0", nil, []string{"train", "-c", sweepZero}, 1, "model.depth=0: model.depth: 0", ""},
		{"a plug-in width 0", nil, tinyViT("--set", "algorithm.name=fedperfix", "--set", "model.prefix.mid=0"), 1, "model.prefix.mid: 0", ""},
		// an empty value would be 0
		{"an empty --set", nil, with("--set", "name=a", "--set", "train.momentum="), 1, "--set train.momentum=: no value", ""},
		{"an empty variable", []string{"PFL_TRAIN_MOMENTUM="}, with("--set", "name=a"), 1, "PFL_TRAIN_MOMENTUM (train.momentum) is empty", ""},
		{"a key without a value in YAML", nil, []string{"train", "-c", noValue}, 1, "algorithm.mu: no value", ""},
		// the counts of absurd but accepted sizes: no int64 wrap to a negative
		{"FLOPs beyond int64", nil, []string{"models", "-preset", "tiny-vit", "-image", "99996", "-patch", "1", "-dim", "100000",
			"-depth", "1000", "-mlp", "100000", "-classes", "1000000"}, 0, "2.052e+17", "  -"},
		{"parameters beyond int64", nil, []string{"models", "-preset", "tiny-vit", "-heads", "100000", "-head-dim", "100000",
			"-depth", "1000", "-dim", "100000"}, 0, "attn_qkv 3,000,000,000,000,000,000,", "  -"},
		// PFL_* variables that are neither keys nor pfl's own
		{"a misspelt section", []string{"PFL_TRAINN_ROUNDS=2"}, with("--set", "name=a"), 1, "PFL_TRAINN_ROUNDS names no config key", ""},
		{"an unknown variable", []string{"PFL_FOO_BAR=1"}, with("--set", "name=a"), 1, "PFL_FOO_BAR names no config key", ""},
		// negative counts of flags
		{"launch --threads -1", nil, []string{"launch", "-n", "1", "-threads", "-1", "--", "doctor"}, 1, "--threads -1", ""},
		{"bench -warmup -1", nil, []string{"bench", "-warmup", "-1", "fedtp-c100-50"}, 1, "-warmup -1", ""},
		// seeds
		{"seeds: []", nil, []string{"train", "-c", noSeeds}, 1, "seeds: empty", ""},
		{"a negative seed", nil, []string{"train", "-c", negativeSeed}, 1, "seeds: -2 is negative", "18446744073709552000"},
		// a config.json without the keys every run writes describes no run
		{"report of a hollow config.json", nil, []string{"report", hollow}, 1, filepath.Join(hollow, "config.json") + ": lacks", ""},
		{"eval of a hollow config.json", nil, []string{"eval", hollow}, 1, filepath.Join(hollow, "config.json") + ": lacks", ""},
		// a checkpoint whose history was edited and re-hashed names the list that is wrong
		{"an edited history", nil, []string{"eval", edited}, 1, "lists 3 losses, but the run has 4 clients", ""},
		// the source of a bad value is blamed, in plain words
		{"a word for a count in the environment", []string{"PFL_TRAIN_ROUNDS=abc"}, with("--set", "name=a"), 1,
			"environment variable PFL_TRAIN_ROUNDS (train.rounds): abc is not a whole number", "config ("},
		{"a fraction for a count in --set", nil, with("--set", "name=a", "--set", "train.rounds=3.7"), 1,
			"--set train.rounds: 3.7 is not a whole number", "config ("},
		{"a misspelt --set key", nil, with("--set", "name=a", "--set", "trian.rounds=3"), 1, "--set trian.rounds=3: no config key", "config ("},
		// t-SNE of embeddings it cannot place
		{"a NaN embedding", nil, []string{"tsne", nanEmb}, 1, filepath.Join(nanEmb, "embeddings.csv") + ": row 2 (client 0), column z1: NaN is not a finite number", ""},
		{"one embedding", nil, []string{"tsne", oneEmb}, 1, filepath.Join(oneEmb, "embeddings.csv") + ": 1 client", ""},
		// the choices offered are real ones
		{"an unknown prefix kind", nil, tinyViT("--set", "model.prefix.kind=lora"), 1, `model.prefix.kind: "lora"; choose adapter, linear, tokens`, "choose ,"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := runPFL(t, tmp, c.env, c.args...)
			if r.code != c.code || !strings.Contains(r.output, c.mention) || (c.absent != "" && strings.Contains(r.output, c.absent)) {
				t.Fatalf("pfl %v: exit %d, output:\n%s\nwant exit %d and a message naming %q (and not %q)", c.args, r.code, r.output, c.code, c.mention, c.absent)
			}
			testenv.SameFiles(t, before, testenv.Snapshot(t, base))
			if _, err := os.Stat(filepath.Join(tmp, "a")); err == nil {
				t.Fatalf("the refused run left %s behind", filepath.Join(tmp, "a"))
			}
		})
	}
}

// hostileInputs are the files TestHostileValuesAreRefusedClearly gives pfl: copies of
// the finished run, each damaged in one way, and configs with a bad value.
type hostileInputs struct {
	hollow, edited, nanEmb, oneEmb            string // run directories
	sweepZero, noSeeds, negativeSeed, noValue string // config files
}

// hostileFiles writes hostileInputs in tmp from the finished run in base.
func hostileFiles(t *testing.T, tmp, base string) hostileInputs {
	t.Helper()
	write := func(name, text string) string {
		p := filepath.Join(tmp, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// copies of the finished run, each damaged in one way
	copyRun := func(name string) string {
		dir := filepath.Join(tmp, name)
		if err := os.CopyFS(dir, os.DirFS(base)); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	hollow := copyRun("hollow")
	write("hollow/config.json", "{}\n")
	edited := copyRun("edited")
	editHistory(t, filepath.Join(edited, "checkpoint.safetensors"))
	nanEmb, oneEmb := copyRun("nan-embeddings"), copyRun("one-embedding")
	write("nan-embeddings/embeddings.csv", "client,novel,z0,z1\n0,false,0.5,NaN\n1,false,0.1,0.2\n")
	write("one-embedding/embeddings.csv", "client,novel,z0,z1\n0,false,0.5,0.25\n")

	grid := "out: " + tmp + "\nname: a\ndata:\n  dataset: synthetic:300\n  clients: 4\ntrain:\n  rounds: 1\n  participation: 0.5\n"
	sweepZero := write("sweep-zero.yaml", grid+"model:\n  preset: tiny-vit\n  patch: 8\nsweep:\n  model.depth: [1, 0]\n")
	noSeeds := write("no-seeds.yaml", grid+"seeds: []\n")
	negativeSeed := write("negative-seed.yaml", grid+"seeds: [1, -2]\n")
	noValue := write("no-value.yaml", grid+"algorithm:\n  mu:\n")
	return hostileInputs{hollow, edited, nanEmb, oneEmb, sweepZero, noSeeds, negativeSeed, noValue}
}

// editHistory drops the last loss of the first evaluation in the checkpoint's history and
// re-hashes it, as someone editing the file by hand would: the checksum holds, the history
// cannot be a run's.
func editHistory(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := safetensors.Read(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var history []map[string]any
	if err := json.Unmarshal([]byte(f.Metadata["history"]), &history); err != nil {
		t.Fatal(err)
	}
	eval, _ := history[0]["Eval"].(map[string]any)
	loss, _ := eval["Loss"].([]any)
	if len(loss) < 2 {
		t.Fatalf("the first round's evaluation has no losses to drop: %v", history[0])
	}
	eval["Loss"] = loss[:len(loss)-1]
	h, err := json.Marshal(history)
	if err != nil {
		t.Fatal(err)
	}
	f.Metadata["history"], f.Metadata["history_sha256"] = string(h), sha256Hex(h)
	var out bytes.Buffer
	if err := safetensors.Write(&out, f.Tensors, f.Metadata); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// sha256Hex is the checkpoint's checksum of its history: hex SHA-256.
func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
