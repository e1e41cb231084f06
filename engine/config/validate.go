package config

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"pfl/engine/data"
	"pfl/engine/data/fetch"
	"pfl/engine/fl"
	"pfl/engine/internal/check"
	"pfl/engine/model"
)

// checker collects the first invalid value, naming its key (engine/internal/check).
type checker = check.Checker

var inf = check.Inf

// partitionMethods are the data.partition choices.
var partitionMethods = []string{string(data.MethodIID), string(data.MethodDirichlet), string(data.MethodPathological),
	string(data.MethodPachinko), string(data.MethodDomainDirichlet), string(data.MethodCoarseGroups), string(data.MethodFile)}

// Validate checks every value that can be checked before loading data, naming the key and
// what it accepts. It takes the resolved config (Resolved).
func (c Config) Validate() error {
	k := &checker{}
	if problem := FolderName(c.Name); problem != "" {
		k.Fail("name", "%s", problem)
	}
	if c.Out == "" {
		k.Fail("out", "empty; want the folder that holds run directories")
	}
	var labels []string
	for _, entry := range c.Suite {
		m, err := ParseMember(entry)
		switch {
		case err != nil:
			k.Fail("suite", "%v", err)
		case m.bare():
			if _, err := fl.LookupAlgorithm(m.Label); err != nil {
				k.Fail("suite", "%v", err)
			}
		case FolderName(m.Label) != "":
			k.Fail("suite", "member label %s", FolderName(m.Label))
		}
		if slices.Contains(labels, m.Label) {
			k.Fail("suite", "%q is listed twice", m.Label)
		}
		labels = append(labels, m.Label)
	}
	if strings.Contains(c.Note, "\n") {
		k.Fail("note", "%q has a line break; want one line (a YAML folded scalar, >-, joins lines)", c.Note)
	}
	k.OneOf("suite_table", c.SuiteTable, "", "sensitivity")
	if c.SuiteTable != "" && len(c.Suite) == 0 {
		k.Fail("suite_table", "%q, but there is no suite", c.SuiteTable)
	}
	c.validateGrid(k)
	// train first: algorithm.hyper.lr and novel.lr follow train.lr unless set, and a bad
	// train.lr must be reported as itself
	c.validateTrain(k)
	c.validateData(k)
	// a suite's algorithm.name is not run: check the model and algorithm keys against
	// every member instead
	members := []Config{c}
	if len(c.Suite) > 0 {
		members = nil
		for _, entry := range c.Suite {
			mem, err := ParseMember(entry)
			if err != nil {
				break // reported above
			}
			m, err := mem.Apply(c)
			if err != nil {
				k.Fail("suite", "%v", err)
				break
			}
			members = append(members, m)
		}
	}
	for _, m := range members {
		m.validateModel(k)
		m.validateAlgorithm(k)
	}
	n := c.Novel
	k.AtLeast("novel.epochs", int64(n.Epochs), 1)
	k.Real("novel.converge_within", n.ConvergeWithin, 0, 1, "[]")
	if n.LR != nil {
		k.Real("novel.lr", *n.LR, 0, inf, "(]")
	}
	if len(n.Tune) == 0 {
		k.Fail("novel.tune", "empty; list %s and/or %s", fl.TuneEmbedding, fl.TuneHypernetwork)
	}
	for _, m := range n.Tune {
		if err := (fl.NovelConfig{Mode: m}).Validate(); err != nil {
			k.Fail("novel.tune", "%q; choose %s or %s", m, fl.TuneEmbedding, fl.TuneHypernetwork)
		}
	}
	return k.Err()
}

// MaxFolderName is the longest name, in bytes, of a run's, suite member's or sweep point's
// folder: its lock file beside it, ".<name>.lock", must fit the 255 bytes a file name may
// have on Linux file systems.
const MaxFolderName = 255 - len("..lock")

// FolderName says what keeps name from being the name of a run's folder (a plain name
// that fits MaxFolderName, without slashes, control characters or a leading dot), or ""
// when nothing does.
func FolderName(name string) string {
	switch {
	case name == "" || strings.HasPrefix(name, "."):
		return fmt.Sprintf("%q; want a plain folder name (not empty, not starting with a dot)", name)
	case strings.ContainsAny(name, `/\`):
		return fmt.Sprintf("%q; want a plain folder name (no slashes)", name)
	case strings.ContainsFunc(name, unicode.IsControl) || !utf8.ValidString(name):
		return fmt.Sprintf("%q has a control character (a line break, a tab) or bytes that are not UTF-8; want a plain folder name", name)
	case len(name) > MaxFolderName:
		return fmt.Sprintf("%d bytes (%.20q…), longer than the %d a folder name may have here (its lock file .<name>.lock must fit the file system's 255)", len(name), name, MaxFolderName)
	}
	return ""
}

func (c Config) validateData(k *checker) {
	d := c.Data
	if d.Dataset == "" {
		k.Fail("data.dataset", "empty; want a dataset such as fashion-mnist or cifar10:<path>")
	}
	k.AtLeast("data.clients", int64(d.Clients), 1)
	if d.Clients > 1_000_000 {
		k.Fail("data.clients", "%d, want at most 1,000,000", d.Clients)
	}
	k.OneOf("data.partition", d.Partition, partitionMethods...)
	k.OneOf("data.convention", d.Convention, "fedtp", "fedperfix")
	switch {
	case d.Partition == string(data.MethodFile) && d.PartitionFile == "":
		k.Fail("data.partition_file", "empty; partition file reads each client's indices from it")
	case d.Partition != string(data.MethodFile) && d.PartitionFile != "":
		k.Fail("data.partition_file", "set with partition %s; it is read only with partition file", d.Partition)
	case d.Partition == string(data.MethodFile) && (d.TrainSamples > 0 || d.TestSamples > 0):
		k.Fail("data.partition", "file with train_samples or test_samples: the file's indices name stored samples, not a random subset's")
	}
	k.Real("data.alpha", d.Alpha, 0, inf, "(]")
	k.AtLeast("data.classes_per_client", int64(d.ClassesPerClient), 1)
	k.AtLeast("data.min_size", int64(d.MinSize), 1)
	k.Real("data.holdout", d.HoldOut, 0, 1, "[)") // 1 would hold out every client
	if k.Err() == nil && d.HoldOut > 0 {
		// data.HoldOut's count of novel clients, and fl's clients per round
		novel, perRound := int(math.Round(d.HoldOut*float64(d.Clients))), int(c.Train.Participation*float64(d.Clients))
		if left := d.Clients - novel; perRound > left {
			k.Fail("data.holdout", "%g holds out %d of the %d clients (data.clients), leaving %d to train, fewer than the %d that train.participation %g samples each round; lower data.holdout or train.participation",
				d.HoldOut, novel, d.Clients, left, perRound, c.Train.Participation)
		}
	}
	k.Real("data.noise", d.Noise, 0, inf, "[]")
	k.AtLeast("data.train_samples", int64(d.TrainSamples), 0)
	k.AtLeast("data.test_samples", int64(d.TestSamples), 0)
	k.Real("data.train_frac", d.TrainFrac, 0, 1, "()") // 1 would leave no test split
	k.AtLeast("data.image_size", int64(d.ImageSize), 0)
	k.AtLeast("data.pad_to", int64(d.PadTo), 0)
	if d.PadTo > 4096 {
		k.Fail("data.pad_to", "%d, want <= 4096 (0 keeps the stored size)", d.PadTo)
	}
	if d.ImageSize > 4096 {
		k.Fail("data.image_size", "%d, want <= 4096 (0 keeps the stored size)", d.ImageSize)
	}
	if d.Channels != 0 && d.Channels != 3 {
		k.Fail("data.channels", "%d; want 0 (as stored) or 3 (repeat a grey channel)", d.Channels)
	}
	k.OneOf("data.normalize", d.Normalize, "auto", "dataset", "half", "cifar10", "cifar100")
	k.AtLeast("data.seq_len", int64(d.SeqLen), 1)
	if d.Download {
		kind, _, _ := strings.Cut(d.Dataset, ":")
		switch ds, ok := fetch.Lookup(kind); {
		case !ok:
			k.Fail("data.download", "pfl fetches %s, not %s", fetch.Names(), kind)
		case ds.Manual != "":
			k.Fail("data.download", "%s is fetched by hand, not by pfl: pfl data get %s prints the steps", ds.Title, ds.Name)
		}
	}
}

// maxModelSize bounds each model size key: even declaring a model of more blocks or a
// wider one would take more memory than a machine has (the memory check builds the
// model's shapes before it allocates anything).
const maxModelSize = 100_000

func (c Config) validateModel(k *checker) {
	m := c.Model
	p, err := model.Lookup(m.Preset)
	if err != nil {
		k.Fail("model.preset", "%v", err)
		return
	}
	// Each model family reads some of the size keys; a key the preset would ignore is
	// refused rather than dropped.
	for _, o := range []struct {
		key, field string
		v          *int64
	}{{"model.depth", "Depth", m.Depth}, {"model.patch", "Patch", m.Patch}, {"model.dim", "Dim", m.Dim},
		{"model.heads", "Heads", m.Heads}, {"model.head_dim", "HeadDim", m.HeadDim}, {"model.mlp", "MLP", m.MLP}} {
		if o.v == nil {
			continue // the preset's
		}
		k.Positive(o.key, *o.v, "the preset's")
		if *o.v > maxModelSize {
			k.Fail(o.key, "%d, want at most %d", *o.v, maxModelSize)
		}
		if !p.Takes(o.field) {
			k.Fail(o.key, "%d, but model.preset %s has no such size; remove it", *o.v, m.Preset)
		}
	}
	// A plug-in field that is set replaces the algorithm's default (model.Spec and the
	// algorithms read 0 as "mine"), so it must be positive like a size.
	for _, o := range []struct {
		key string
		v   *int64
	}{{"model.prefix.blocks", m.Prefix.Blocks}, {"model.prefix.mid", m.Prefix.Mid}, {"model.prefix.length", m.Prefix.Length},
		{"model.prompts", m.Prompts}, {"model.adapter.mid", m.Adapter.Mid}} {
		if o.v != nil {
			k.Positive(o.key, *o.v, "the algorithm's")
		}
	}
	for _, o := range []struct {
		key string
		v   *float64
	}{{"model.prefix.scale", m.Prefix.Scale}, {"model.adapter.scale", m.Adapter.Scale}} {
		if o.v != nil {
			k.Real(o.key, *o.v, 0, inf, "(]")
		}
	}
	plugIns := []struct {
		key, field string
		set        bool
	}{{"model.prefix", "Prefix", m.Prefix != (Prefix{})}, {"model.prompts", "Prompts", m.Prompts != nil},
		{"model.adapter", "Adapter", m.Adapter != (Adapter{})}}
	for _, o := range plugIns {
		if o.set && !p.Takes(o.field) {
			k.Fail(o.key, "set, but model.preset %s takes no plug-ins (a ViT preset does); remove it", m.Preset)
		}
	}
	// "" is unset (the algorithm's choice), not a choice to offer
	if m.Prefix.Kind != "" {
		k.OneOf("model.prefix.kind", m.Prefix.Kind, "adapter", "linear", "tokens")
	}
	if m.Prefix.Form != "" {
		k.OneOf("model.prefix.form", m.Prefix.Form, "add", "concat")
	}
	if m.Prefix.Init != "" {
		k.OneOf("model.prefix.init", m.Prefix.Init, "default", "zero")
	}
	// Without an algorithm that fills in its own defaults, a plug-in must be complete: a
	// prefix without blocks would silently be none.
	prefixAlgorithms, adapterAlgorithms := fl.AddingPlugIn(fl.PlugInPrefix), fl.AddingPlugIn(fl.PlugInAdapter)
	if m.Prefix != (Prefix{}) && m.Prefix.Blocks == nil && !slices.Contains(prefixAlgorithms, c.Algorithm.Name) {
		k.Fail("model.prefix.blocks", "unset: set it (algorithm %s adds no prefix of its own; %s do)", c.Algorithm.Name, strings.Join(prefixAlgorithms, ", "))
	}
	if m.Adapter != (Adapter{}) && m.Adapter.Mid == nil && !slices.Contains(adapterAlgorithms, c.Algorithm.Name) {
		k.Fail("model.adapter.mid", "unset: set it (algorithm %s adds no adapter of its own)", c.Algorithm.Name)
	}
}

// validateAlgorithm checks the algorithm keys: each algorithm's own (fl.Settings.Validate).
func (c Config) validateAlgorithm(k *checker) {
	k.Add(c.Algorithm.Validate(c.Train.Epochs))
}

func (c Config) validateTrain(k *checker) {
	t := c.Train
	// the keys fl.Config shares are checked by fl (one check per key)
	k.Add(c.FL().Check(trainKeys))
	k.Real("train.participation", t.Participation, 0, 1, "(]")
	if k.Err() == nil && c.Data.Clients >= 1 {
		if n := int(t.Participation * float64(c.Data.Clients)); n < 1 {
			k.Fail("train.participation", "%g × data.clients %d selects no client; want participation >= %g",
				t.Participation, c.Data.Clients, 1/float64(c.Data.Clients))
		}
	}
	k.AtLeast("train.tail_rounds", int64(t.TailRounds), 1)
	k.OneOf("train.precision", t.Precision, "fp32", "tf32", "bf16")
	k.AtLeast("train.checkpoint_every", int64(t.CheckpointEvery), 1)
}

// trainKeys name the settings fl.Config shares with the train section by their keys.
var trainKeys = fl.Keys{Rounds: "train.rounds", Epochs: "train.epochs", Batch: "train.batch", LR: "train.lr",
	Momentum: "train.momentum", WeightDecay: "train.weight_decay", EvalEvery: "train.eval_every",
	EvalChunk: "train.eval_chunk", EvalBatch: "train.eval_batch", Protocol: "train.eval_protocol",
	Sequential: "train.sequential", Workers: "train.workers", Stack: "train.stack", Autocast: "train.precision"}

// unsweepable are the keys a sweep may not range over: the run's location and the keys
// that define the grid itself (seeds take the place of sweeping seed).
var unsweepable = []string{"name", "out", "seed", "seeds", "suite", "suite_table", "note", "sweep"}

// validateGrid checks seeds and the sweep block's keys and values (each point's whole
// config is checked by NewGrid before any point runs).
func (c Config) validateGrid(k *checker) {
	if c.Seeds != nil && len(c.Seeds) == 0 {
		// an empty list runs one run of seed, which is not what a list of seeds asks for
		k.Fail("seeds", "empty; list at least one seed, or remove seeds for one run of seed")
	}
	if len(c.Seeds) > 0 && c.Seed != Default().Seed {
		k.Fail("seeds", "seed and seeds are both set (seed %d, seeds %v); keep one", c.Seed, c.Seeds)
	}
	for i, s := range c.Seeds {
		if slices.Contains(c.Seeds[:i], s) {
			k.Fail("seeds", "seed %d is listed twice", s)
		}
	}
	if len(c.Sweep) == 0 {
		return
	}
	flat, err := Flatten(c)
	if err != nil {
		k.Fail("sweep", "%v", err)
		return
	}
	var keys []string
	for _, a := range c.Sweep {
		key := "sweep: " + a.Key
		_, known := flat[a.Key]
		switch {
		case slices.Contains(unsweepable, a.Key) && a.Key == "seed":
			k.Fail(key, "a sweep cannot range over seed; list the seeds in seeds: [...]")
		case slices.Contains(unsweepable, a.Key):
			k.Fail(key, "a sweep cannot range over %s", a.Key)
		case !known:
			k.Fail(key, "unknown key (a sweep ranges over config keys such as data.alpha or train.participation)")
		case slices.Contains(keys, a.Key):
			k.Fail(key, "listed twice")
		case len(a.Values) == 0:
			k.Fail(key, "no values; list at least one")
		}
		keys = append(keys, a.Key)
		for i, v := range a.Values {
			if slices.Contains(a.Values[:i], v) {
				k.Fail(key, "value %s is listed twice", v)
			}
		}
	}
}
