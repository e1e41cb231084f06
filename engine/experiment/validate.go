package experiment

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/data/fetch"
	"pfl/engine/fl"
	"pfl/engine/model"
)

// checker collects the first invalid value, naming its key.
type checker struct{ err error }

func (k *checker) fail(key, format string, args ...any) {
	if k.err == nil {
		k.err = fmt.Errorf("%s: %s", key, fmt.Sprintf(format, args...))
	}
}

// atLeast requires v >= lo.
func (k *checker) atLeast(key string, v, lo int64) {
	if v < lo {
		k.fail(key, "%d, want >= %d", v, lo)
	}
}

// positive requires v >= 1 for an optional key that is set; unset, the key is what
// otherwise names ("the preset's"), which a 0 would silently mean too.
func (k *checker) positive(key string, v int64, otherwise string) {
	if v < 1 {
		k.fail(key, "%d, want >= 1 (or leave it unset, null, for %s)", v, otherwise)
	}
}

// real requires a finite v in the interval from lo to hi (hi = +Inf for none); bounds
// says which ends are closed, as written: "[]", "(]", "[)" or "()".
func (k *checker) real(key string, v, lo, hi float64, bounds string) {
	openLo, openHi := bounds[0] == '(', bounds[1] == ')' || math.IsInf(hi, 1)
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		k.fail(key, "%g is not a finite number", v)
	case v < lo, openLo && v == lo, v > hi, openHi && v == hi:
		ub := fmt.Sprintf("%g%c", hi, bounds[1])
		if math.IsInf(hi, 1) {
			ub = "∞)"
		}
		k.fail(key, "%g, want a value in %c%g, %s", v, bounds[0], lo, ub)
	}
}

// oneOf requires v to be one of the choices.
func (k *checker) oneOf(key, v string, choices ...string) {
	if !slices.Contains(choices, v) {
		k.fail(key, "%q; choose %s", v, strings.Join(choices, ", "))
	}
}

var inf = math.Inf(1)

// partitionMethods are the data.partition choices.
var partitionMethods = []string{string(data.MethodIID), string(data.MethodDirichlet), string(data.MethodPathological),
	string(data.MethodPachinko), string(data.MethodDomainDirichlet), string(data.MethodCoarseGroups), string(data.MethodFile)}

// Validate checks every value that can be checked before loading data, naming the key and
// what it accepts. It takes the resolved config (Resolved).
func (c Config) Validate() error {
	k := &checker{}
	if c.Name == "" || c.Name == "." || c.Name == ".." || strings.ContainsAny(c.Name, `/\`) || strings.HasPrefix(c.Name, ".") {
		k.fail("name", "%q; want a plain folder name (no slashes, not starting with a dot)", c.Name)
	}
	if c.Out == "" {
		k.fail("out", "empty; want the folder that holds run directories")
	}
	if _, err := cuda.ParseDevice(c.Device); err != nil {
		k.fail("device", "%v", err)
	}
	var labels []string
	for _, entry := range c.Suite {
		m, err := parseMember(entry)
		switch {
		case err != nil:
			k.fail("suite", "%v", err)
		case len(m.sets) == 1 && m.sets[0][0] == "algorithm.name" && m.sets[0][1] == m.label:
			if _, err := fl.LookupAlgorithm(m.label); err != nil {
				k.fail("suite", "%v", err)
			}
		case m.label == "" || strings.ContainsAny(m.label, `/\`) || strings.HasPrefix(m.label, "."):
			k.fail("suite", "member label %q; want a plain folder name", m.label)
		}
		if slices.Contains(labels, m.label) {
			k.fail("suite", "%q is listed twice", m.label)
		}
		labels = append(labels, m.label)
	}
	k.oneOf("suite_table", c.SuiteTable, "", "sensitivity")
	if c.SuiteTable != "" && len(c.Suite) == 0 {
		k.fail("suite_table", "%q, but there is no suite", c.SuiteTable)
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
			mem, err := parseMember(entry)
			if err != nil {
				break // reported above
			}
			m, err := mem.apply(c)
			if err != nil {
				k.fail("suite", "%v", err)
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
	k.atLeast("novel.epochs", int64(n.Epochs), 1)
	k.real("novel.converge_within", n.ConvergeWithin, 0, 1, "[]")
	if n.LR != nil {
		k.real("novel.lr", *n.LR, 0, inf, "(]")
	}
	if len(n.Tune) == 0 {
		k.fail("novel.tune", "empty; list %s and/or %s", fl.TuneEmbedding, fl.TuneHypernetwork)
	}
	for _, m := range n.Tune {
		if err := (fl.NovelConfig{Mode: m}).Validate(); err != nil {
			k.fail("novel.tune", "%q; choose %s or %s", m, fl.TuneEmbedding, fl.TuneHypernetwork)
		}
	}
	return k.err
}

func (c Config) validateData(k *checker) {
	d := c.Data
	if d.Dataset == "" {
		k.fail("data.dataset", "empty; want a dataset such as fashion-mnist or cifar10:<path>")
	}
	k.atLeast("data.clients", int64(d.Clients), 1)
	if d.Clients > 1_000_000 {
		k.fail("data.clients", "%d, want at most 1,000,000", d.Clients)
	}
	k.oneOf("data.partition", d.Partition, partitionMethods...)
	k.oneOf("data.convention", d.Convention, "fedtp", "fedperfix")
	switch {
	case d.Partition == string(data.MethodFile) && d.PartitionFile == "":
		k.fail("data.partition_file", "empty; partition file reads each client's indices from it")
	case d.Partition != string(data.MethodFile) && d.PartitionFile != "":
		k.fail("data.partition_file", "set with partition %s; it is read only with partition file", d.Partition)
	case d.Partition == string(data.MethodFile) && (d.TrainSamples > 0 || d.TestSamples > 0):
		k.fail("data.partition", "file with train_samples or test_samples: the file's indices name stored samples, not a random subset's")
	}
	k.real("data.alpha", d.Alpha, 0, inf, "(]")
	k.atLeast("data.classes_per_client", int64(d.ClassesPerClient), 1)
	k.atLeast("data.min_size", int64(d.MinSize), 1)
	k.real("data.holdout", d.HoldOut, 0, 1, "[)") // 1 would hold out every client
	k.real("data.noise", d.Noise, 0, inf, "[]")
	k.atLeast("data.train_samples", int64(d.TrainSamples), 0)
	k.atLeast("data.test_samples", int64(d.TestSamples), 0)
	k.real("data.train_frac", d.TrainFrac, 0, 1, "()") // 1 would leave no test split
	k.atLeast("data.image_size", int64(d.ImageSize), 0)
	k.atLeast("data.pad_to", int64(d.PadTo), 0)
	if d.PadTo > 4096 {
		k.fail("data.pad_to", "%d, want <= 4096 (0 keeps the stored size)", d.PadTo)
	}
	if d.ImageSize > 4096 {
		k.fail("data.image_size", "%d, want <= 4096 (0 keeps the stored size)", d.ImageSize)
	}
	if d.Channels != 0 && d.Channels != 3 {
		k.fail("data.channels", "%d; want 0 (as stored) or 3 (repeat a grey channel)", d.Channels)
	}
	k.oneOf("data.normalize", d.Normalize, "auto", "dataset", "half", "cifar10", "cifar100")
	k.atLeast("data.seq_len", int64(d.SeqLen), 1)
	if d.Download {
		kind, _, _ := strings.Cut(d.Dataset, ":")
		switch ds, ok := fetch.Lookup(kind); {
		case !ok:
			k.fail("data.download", "pfl fetches %s, not %s", fetch.Names(), kind)
		case ds.Manual != "":
			k.fail("data.download", "%s is fetched by hand, not by pfl: pfl data get %s prints the steps", ds.Title, ds.Name)
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
		k.fail("model.preset", "%v", err)
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
		k.positive(o.key, *o.v, "the preset's")
		if *o.v > maxModelSize {
			k.fail(o.key, "%d, want at most %d", *o.v, maxModelSize)
		}
		if !p.Takes(o.field) {
			k.fail(o.key, "%d, but model.preset %s has no such size; remove it", *o.v, m.Preset)
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
			k.positive(o.key, *o.v, "the algorithm's")
		}
	}
	for _, o := range []struct {
		key string
		v   *float64
	}{{"model.prefix.scale", m.Prefix.Scale}, {"model.adapter.scale", m.Adapter.Scale}} {
		if o.v != nil {
			k.real(o.key, *o.v, 0, inf, "(]")
		}
	}
	plugIns := []struct {
		key, field string
		set        bool
	}{{"model.prefix", "Prefix", m.Prefix != (PrefixConfig{})}, {"model.prompts", "Prompts", m.Prompts != nil},
		{"model.adapter", "Adapter", m.Adapter != (AdapterConfig{})}}
	for _, o := range plugIns {
		if o.set && !p.Takes(o.field) {
			k.fail(o.key, "set, but model.preset %s takes no plug-ins (a ViT preset does); remove it", m.Preset)
		}
	}
	// "" is unset (the algorithm's choice), not a choice to offer
	if m.Prefix.Kind != "" {
		k.oneOf("model.prefix.kind", m.Prefix.Kind, "adapter", "linear", "tokens")
	}
	if m.Prefix.Form != "" {
		k.oneOf("model.prefix.form", m.Prefix.Form, "add", "concat")
	}
	if m.Prefix.Init != "" {
		k.oneOf("model.prefix.init", m.Prefix.Init, "default", "zero")
	}
	// Without an algorithm that fills in its own defaults, a plug-in must be complete: a
	// prefix without blocks would silently be none.
	if m.Prefix != (PrefixConfig{}) && m.Prefix.Blocks == nil && !slices.Contains(prefixAlgorithms, c.Algorithm.Name) {
		k.fail("model.prefix.blocks", "unset: set it (algorithm %s adds no prefix of its own; %s do)", c.Algorithm.Name, strings.Join(prefixAlgorithms, ", "))
	}
	if m.Adapter != (AdapterConfig{}) && m.Adapter.Mid == nil && !slices.Contains(adapterAlgorithms, c.Algorithm.Name) {
		k.fail("model.adapter.mid", "unset: set it (algorithm %s adds no adapter of its own)", c.Algorithm.Name)
	}
}

func (c Config) validateAlgorithm(k *checker) {
	a := c.Algorithm
	if _, err := fl.LookupAlgorithm(a.Name); err != nil {
		k.fail("algorithm.name", "%v", err)
	}
	k.real("algorithm.mu", a.Mu, 0, inf, "[]")
	k.oneOf("algorithm.generic_loss", a.GenericLoss, "balanced", "ce")
	if _, err := generatedRoles(a.Generate); err != nil {
		k.fail("algorithm.generate", "%v", err)
	}
	if a.Generate != nil && len(a.Generate) == 0 {
		k.fail("algorithm.generate", "empty; list at least one role, or leave it unset for the algorithm's own")
	}
	if a.Name == "pfedhn" && a.Generate != nil {
		k.fail("algorithm.generate", "set, but algorithm pfedhn generates every trainable parameter; remove it")
	}
	h := a.Hyper
	if h.Embed != nil {
		k.atLeast("algorithm.hyper.embed", *h.Embed, 1)
	}
	if h.Hidden != nil {
		k.atLeast("algorithm.hyper.hidden", *h.Hidden, 1)
	}
	k.atLeast("algorithm.hyper.layers", int64(h.Layers), 1)
	if h.LR != nil {
		k.real("algorithm.hyper.lr", *h.LR, 0, inf, "(]")
	}
	k.real("algorithm.hyper.momentum", h.Momentum, 0, 1, "[)")
	k.real("algorithm.hyper.weight_decay", h.WeightDecay, 0, inf, "[]")
	if h.Rank != nil {
		k.atLeast("algorithm.hyper.rank", *h.Rank, 0)
	}
	partial := slices.Contains(partialAlgorithms, a.Name)
	if _, err := localRoles(a.LocalRoles); err != nil {
		k.fail("algorithm.local_roles", "%v", err)
	}
	for _, b := range a.LocalBlocks {
		k.atLeast("algorithm.local_blocks", int64(b), 0)
	}
	switch {
	case !partial && (a.LocalRoles != nil || a.LocalBlocks != nil):
		k.fail("algorithm.local_roles", "set, but algorithm %s does not read local_roles or local_blocks (%s do); remove them", a.Name, strings.Join(partialAlgorithms, ", "))
	case a.Name == "partial" && len(a.LocalRoles) == 0 && len(a.LocalBlocks) == 0:
		k.fail("algorithm.local_roles", "empty; algorithm partial keeps local only what local_roles and local_blocks list")
	}
	if a.LocalClients != "" {
		k.oneOf("algorithm.local_clients", a.LocalClients, "all", "sampled")
		if a.Name != "local" {
			k.fail("algorithm.local_clients", "set, but algorithm %s trains the sampled clients and does not read it (only local does); remove it", a.Name)
		}
	}
	k.atLeast("algorithm.knn.k", int64(a.KNN.K), 1)
	k.real("algorithm.knn.weight", a.KNN.Weight, 0, 1, "[]")
	k.atLeast("algorithm.fedrep.rep_epochs", int64(a.FedRep.RepEpochs), 1)
	if a.Name == "fedrep" && a.FedRep.RepEpochs >= c.Train.Epochs {
		k.fail("algorithm.fedrep.rep_epochs", "%d, but train.epochs is %d: fedrep trains train.epochs − rep_epochs head epochs, then rep_epochs body epochs; want rep_epochs < train.epochs", a.FedRep.RepEpochs, c.Train.Epochs)
	}
	k.real("algorithm.ditto.lambda", a.Ditto.Lambda, 0, inf, "[]")
	k.real("algorithm.apfl.alpha", a.APFL.Alpha, 0, 1, "[]")
	k.real("algorithm.perfedavg.alpha", a.PerFedAvg.Alpha, 0, inf, "[]")
	k.real("algorithm.perfedavg.beta", a.PerFedAvg.Beta, 0, inf, "(]")
	k.oneOf("algorithm.perfedavg.variant", a.PerFedAvg.Variant, "fo", "hf")
	k.real("algorithm.pfedme.lambda", a.PFedMe.Lambda, 0, inf, "(]")
	k.atLeast("algorithm.pfedme.inner_steps", int64(a.PFedMe.InnerSteps), 1)
	if a.PFedMe.PersonalLR != nil {
		k.real("algorithm.pfedme.personal_lr", *a.PFedMe.PersonalLR, 0, inf, "(]")
	}
	k.real("algorithm.pfedme.beta", a.PFedMe.Beta, 0, inf, "(]")
	k.oneOf("algorithm.pfedme.clients", a.PFedMe.Clients, "sampled", "all")
	k.atLeast("algorithm.pfedhn.inner_steps", int64(a.PFedHN.InnerSteps), 0)
	k.real("algorithm.pfedhn.clip", a.PFedHN.Clip, 0, inf, "[]")
	g := a.PFedGP
	k.atLeast("algorithm.pfedgp.embed_dim", g.EmbedDim, 1)
	k.real("algorithm.pfedgp.outputscale", g.OutputScale, 0, inf, "(]")
	k.real("algorithm.pfedgp.lengthscale", g.LengthScale, 0, inf, "(]")
	k.atLeast("algorithm.pfedgp.gibbs_draws", int64(g.GibbsDraws), 1)
	k.atLeast("algorithm.pfedgp.gibbs_steps", int64(g.GibbsSteps), 0)
	k.atLeast("algorithm.pfedgp.eval_gibbs_draws", int64(g.EvalGibbsDraws), 1)
	k.atLeast("algorithm.pfedgp.eval_gibbs_steps", int64(g.EvalGibbsSteps), 0)
	k.oneOf("algorithm.pfedgp.objective", g.Objective, "predictive", "marginal")
	k.real("algorithm.pfedgp.predict_ratio", g.PredictRatio, 0, 1, "()")
	k.atLeast("algorithm.pfedgp.inducing", int64(g.Inducing), 1)
	k.oneOf("algorithm.pfedgp.weights", g.Weights, "uniform", "samples")
	k.real("algorithm.pfedgp.loss_scaler", g.LossScaler, 0, inf, "()")
	k.real("algorithm.pfedgp.clip", g.Clip, 0, inf, "[]")
	if a.Name == "pfedgp-ip" && g.Objective != "predictive" {
		k.fail("algorithm.pfedgp.objective", "%q, but algorithm pfedgp-ip trains the predictive objective only", g.Objective)
	}
}

func (c Config) validateTrain(k *checker) {
	t := c.Train
	k.atLeast("train.rounds", int64(t.Rounds), 1)
	k.real("train.participation", t.Participation, 0, 1, "(]")
	if k.err == nil && c.Data.Clients >= 1 {
		if n := int(t.Participation * float64(c.Data.Clients)); n < 1 {
			k.fail("train.participation", "%g × data.clients %d selects no client; want participation >= %g",
				t.Participation, c.Data.Clients, 1/float64(c.Data.Clients))
		}
	}
	k.atLeast("train.epochs", int64(t.Epochs), 1)
	k.atLeast("train.batch", int64(t.Batch), 1)
	k.real("train.lr", t.LR, 0, inf, "(]")
	k.real("train.momentum", t.Momentum, 0, 1, "[)")
	k.real("train.weight_decay", t.WeightDecay, 0, inf, "[]")
	k.atLeast("train.eval_every", int64(t.EvalEvery), 0)
	k.atLeast("train.eval_chunk", int64(t.EvalChunk), 0)
	k.atLeast("train.eval_batch", int64(t.EvalBatch), 0)
	k.atLeast("train.workers", int64(t.Workers), 0)
	if t.Workers > 1 && t.Sequential {
		k.fail("train.workers", "%d, but train.sequential trains one client at a time; set one of them", t.Workers)
	}
	if dev, err := cuda.ParseDevice(c.Device); err == nil && dev.IsCUDA() && t.Workers > 1 {
		k.fail("train.workers", "%d on %s: client groups on threads are for the CPU, where one stacked model leaves cores idle; leave it 0 or set 1", t.Workers, c.Device)
	}
	k.atLeast("train.stack", int64(t.Stack), 0)
	if t.Stack > 0 && t.Sequential {
		k.fail("train.stack", "%d, but train.sequential trains one client at a time; set one of them", t.Stack)
	}
	if dev, err := cuda.ParseDevice(c.Device); err == nil && dev.IsCUDA() && t.Stack > 0 {
		k.fail("train.stack", "%d on %s: client groups are for the CPU; on CUDA all the round's clients train as one stack (leave it 0)", t.Stack, c.Device)
	}
	k.oneOf("train.eval_protocol", t.EvalProtocol, string(fl.EvalFedTP), string(fl.EvalFedPerfix))
	k.atLeast("train.tail_rounds", int64(t.TailRounds), 1)
	k.oneOf("train.precision", t.Precision, "fp32", "tf32", "bf16")
	k.atLeast("train.checkpoint_every", int64(t.CheckpointEvery), 1)
}

// unsweepable are the keys a sweep may not range over: the run's location and the keys
// that define the grid itself (seeds take the place of sweeping seed).
var unsweepable = []string{"name", "out", "seed", "seeds", "suite", "suite_table", "sweep"}

// validateGrid checks seeds and the sweep block's keys and values (each point's whole
// config is checked by RunGrid before any point runs).
func (c Config) validateGrid(k *checker) {
	if c.Seeds != nil && len(c.Seeds) == 0 {
		// an empty list runs one run of seed, which is not what a list of seeds asks for
		k.fail("seeds", "empty; list at least one seed, or remove seeds for one run of seed")
	}
	if len(c.Seeds) > 0 && c.Seed != DefaultConfig().Seed {
		k.fail("seeds", "seed and seeds are both set (seed %d, seeds %v); keep one", c.Seed, c.Seeds)
	}
	for i, s := range c.Seeds {
		if slices.Contains(c.Seeds[:i], s) {
			k.fail("seeds", "seed %d is listed twice", s)
		}
	}
	if len(c.Sweep) == 0 {
		return
	}
	flat, err := flatten(c)
	if err != nil {
		k.fail("sweep", "%v", err)
		return
	}
	var keys []string
	for _, a := range c.Sweep {
		key := "sweep: " + a.Key
		_, known := flat[a.Key]
		switch {
		case slices.Contains(unsweepable, a.Key) && a.Key == "seed":
			k.fail(key, "a sweep cannot range over seed; list the seeds in seeds: [...]")
		case slices.Contains(unsweepable, a.Key):
			k.fail(key, "a sweep cannot range over %s", a.Key)
		case !known:
			k.fail(key, "unknown key (a sweep ranges over config keys such as data.alpha or train.participation)")
		case slices.Contains(keys, a.Key):
			k.fail(key, "listed twice")
		case len(a.Values) == 0:
			k.fail(key, "no values; list at least one")
		}
		keys = append(keys, a.Key)
		for i, v := range a.Values {
			if slices.Contains(a.Values[:i], v) {
				k.fail(key, "value %s is listed twice", v)
			}
		}
	}
}
