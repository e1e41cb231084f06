package data

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"pfl/engine/internal/defaults"
	"pfl/engine/rng"
)

// Method names a partition.
type Method string

// Partition methods.
const (
	MethodIID             Method = "iid"
	MethodDirichlet       Method = "dirichlet"
	MethodPathological    Method = "pathological"
	MethodPachinko        Method = "pachinko"
	MethodDomainDirichlet Method = "domain-dirichlet"
	MethodCoarseGroups    Method = "coarse-groups"
	// MethodFile reads the assignment from PartitionConfig.File (ReadIndexFile): the
	// partition another implementation drew, so that both train on the same clients.
	MethodFile Method = "file"
)

// Convention is how clients get test data.
type Convention string

// Train/test conventions.
const (
	// ConventionFedTP draws each client's test split from the official test set with the
	// same class proportions as its train split (the Pachinko split pools both sets and
	// returns each sample to the set it came from).
	ConventionFedTP Convention = "fedtp"
	// ConventionFedPerfix merges the official train and test sets, partitions the pool and
	// splits every client TrainFrac / 1−TrainFrac.
	ConventionFedPerfix Convention = "fedperfix"
)

// PartitionConfig describes how a dataset is spread over clients. Zero values take the
// documented defaults.
type PartitionConfig struct {
	Method     Method
	Convention Convention // default fedtp
	Clients    int
	Seed       uint64

	Alpha            float64 // dirichlet, domain-dirichlet and pachinko's coarse level (no default: required)
	Beta             float64 // pachinko's fine level; default 10
	ClassesPerClient int     // pathological: 2 for 10 classes, 10 for 100 in FedTP
	MinSize          int     // dirichlet: minimum samples per client; default 10
	MaxDraws         int     // dirichlet: redraws before an error; default 1000
	TrainFrac        float64 // fedperfix: default 0.75
	HoldOut          float64 // fraction of clients never trained (novel clients); default 0
	NoiseMax         float64 // feature imbalance: client i gets noise std NoiseMax·i/(N−1); default 0
	File             string  // file: the index lists' JSON file (ReadIndexFile)
}

// Federated is a dataset spread over clients: client i trains on Train's images Part.Train[i]
// and is tested on Test's images Part.Test[i].
type Federated struct {
	Config      PartitionConfig
	Train, Test *Images // under the FedPerfix convention both are the merged pool
	Part        Partition
}

// Partition is the assignment itself.
type Partition struct {
	Train, Test [][]int   // per client, indices into Federated.Train and .Test
	Novel       []int     // clients held out of training, sorted
	Noise       []float64 // per-client noise std (nil without feature imbalance)
}

// Partition spreads sp over clients as cfg says; it is deterministic given cfg.Seed.
func (sp *Split) Partition(cfg PartitionConfig) (*Federated, error) {
	defaults.Set(&cfg.Convention, ConventionFedTP)
	defaults.Set(&cfg.Beta, 10)
	defaults.Set(&cfg.MinSize, 10)
	defaults.Set(&cfg.TrainFrac, 0.75)
	if cfg.Clients < 1 {
		return nil, fmt.Errorf("data: partition: %d clients", cfg.Clients)
	}
	if cfg.NoiseMax < 0 {
		return nil, fmt.Errorf("data: partition: noise %g < 0", cfg.NoiseMax)
	}
	r := rng.New(rng.Key{Seed: cfg.Seed, Purpose: "partition", Round: -1, Client: -1})
	f := &Federated{Config: cfg, Train: sp.Train, Test: sp.Test}
	var err error
	switch {
	case cfg.Method == MethodFile:
		err = f.partitionFile(cfg)
	case cfg.Convention == ConventionFedPerfix:
		f.Train = Concat(sp.Train, sp.Test)
		f.Test = f.Train
		var parts [][]int
		if parts, err = partitionPool(f.Train, cfg, r); err == nil {
			f.Part.Train, f.Part.Test, err = TrainTestSplit(parts, cfg.TrainFrac, r)
		}
	case cfg.Convention == ConventionFedTP:
		err = f.partitionFedTP(cfg, r)
	default:
		err = fmt.Errorf("data: unknown convention %q (fedtp or fedperfix)", cfg.Convention)
	}
	if err != nil {
		return nil, err
	}
	if f.Part.Novel, err = HoldOut(cfg.Clients, cfg.HoldOut, r); err != nil {
		return nil, err
	}
	if cfg.NoiseMax > 0 {
		f.Part.Noise = NoiseLevels(cfg.Clients, cfg.NoiseMax)
	}
	return f, nil
}

func (f *Federated) partitionFedTP(cfg PartitionConfig, r *rand.Rand) error {
	tr, te := f.Train, f.Test
	if te.N == 0 {
		return fmt.Errorf("data: %s has no official test set (Office-Home); use the fedperfix convention", tr.Name)
	}
	switch cfg.Method {
	case MethodIID:
		var err error
		if f.Part.Train, err = IID(tr.N, cfg.Clients, r); err != nil {
			return err
		}
		f.Part.Test, err = IID(te.N, cfg.Clients, r)
		return err
	case MethodDirichlet:
		parts, shares, err := Dirichlet(tr.Labels, tr.Classes, cfg.Clients,
			DirichletConfig{Alpha: cfg.Alpha, MinSize: cfg.MinSize, MaxDraws: cfg.MaxDraws}, te.Labels, cfg.MinSize, r)
		if err != nil {
			return err
		}
		f.Part.Train, f.Part.Test = parts, shares.Split(te.Labels, r)
		return nil
	case MethodPathological:
		parts, shares, err := Pathological(tr.Labels, tr.Classes, cfg.Clients, cfg.ClassesPerClient, r)
		if err != nil {
			return err
		}
		f.Part.Train, f.Part.Test = parts, shares.Split(te.Labels, r)
		return nil
	case MethodPachinko:
		if tr.Coarse == nil || te.Coarse == nil {
			return fmt.Errorf("data: pachinko needs coarse labels (cifar100, kermany); %s has none", tr.Name)
		}
		pool := Concat(tr, te)
		parts, err := Pachinko(pool.Labels, pool.Coarse, pool.Classes, pool.CoarseClasses, cfg.Clients, cfg.Alpha, cfg.Beta, r)
		if err != nil {
			return err
		}
		for _, p := range parts { // each sample goes back to the set it came from
			var a, b []int
			for _, i := range p {
				if i < tr.N {
					a = append(a, i)
				} else {
					b = append(b, i-tr.N)
				}
			}
			f.Part.Train, f.Part.Test = append(f.Part.Train, a), append(f.Part.Test, b)
		}
		return nil
	case MethodCoarseGroups:
		// the client of each coarse class is fixed by the class index, so train and test agree
		var err error
		if tr.Coarse == nil || te.Coarse == nil {
			return fmt.Errorf("data: coarse-groups needs coarse labels (cifar100, kermany); %s has none", tr.Name)
		}
		if f.Part.Train, err = CoarseGroups(tr.Labels, tr.Coarse, tr.Classes, tr.CoarseClasses, cfg.Clients, r); err != nil {
			return err
		}
		f.Part.Test, err = CoarseGroups(te.Labels, te.Coarse, te.Classes, te.CoarseClasses, cfg.Clients, r)
		return err
	default:
		return fmt.Errorf("data: method %q has no FedTP convention; choose iid, dirichlet, pathological, pachinko or coarse-groups, or use the fedperfix convention", cfg.Method)
	}
}

// partitionPool partitions one pool of images (the FedPerfix convention).
func partitionPool(x *Images, cfg PartitionConfig, r *rand.Rand) ([][]int, error) {
	dc := DirichletConfig{Alpha: cfg.Alpha, MinSize: cfg.MinSize, MaxDraws: cfg.MaxDraws}
	switch cfg.Method {
	case MethodIID:
		return IID(x.N, cfg.Clients, r)
	case MethodDirichlet:
		p, _, err := Dirichlet(x.Labels, x.Classes, cfg.Clients, dc, nil, 0, r)
		return p, err
	case MethodPathological:
		p, _, err := Pathological(x.Labels, x.Classes, cfg.Clients, cfg.ClassesPerClient, r)
		return p, err
	case MethodPachinko:
		if x.Coarse == nil {
			return nil, fmt.Errorf("data: pachinko needs coarse labels (cifar100, kermany); %s has none", x.Name)
		}
		return Pachinko(x.Labels, x.Coarse, x.Classes, x.CoarseClasses, cfg.Clients, cfg.Alpha, cfg.Beta, r)
	case MethodDomainDirichlet:
		if x.Domains == nil {
			return nil, fmt.Errorf("data: domain-dirichlet needs domains (image folders by domain); %s has none", x.Name)
		}
		nd := len(x.DomainNames)
		if cfg.Clients%nd != 0 {
			return nil, fmt.Errorf("data: domain-dirichlet: %d clients do not split evenly over %d domains", cfg.Clients, nd)
		}
		return DomainDirichlet(x.Labels, x.Domains, x.Classes, nd, cfg.Clients/nd, dc, r)
	case MethodCoarseGroups:
		if x.Coarse == nil {
			return nil, fmt.Errorf("data: coarse-groups needs coarse labels (cifar100, kermany); %s has none", x.Name)
		}
		return CoarseGroups(x.Labels, x.Coarse, x.Classes, x.CoarseClasses, cfg.Clients, r)
	}
	return nil, fmt.Errorf("data: unknown partition method %q; choose iid, dirichlet, pathological, pachinko, domain-dirichlet or coarse-groups", cfg.Method)
}

// Concat joins image sets of the same geometry (the FedPerfix pool, Pachinko's pool).
func Concat(a, b *Images) *Images {
	out := *a
	out.Name = a.Name + "+" + b.Name
	if a.Source != "" && b.Source != "" {
		out.Source = a.Source + " and " + b.Source
	}
	out.N = a.N + b.N
	out.Pixels = slices.Concat(a.Pixels, b.Pixels)
	out.Labels = slices.Concat(a.Labels, b.Labels)
	if a.Coarse != nil && b.Coarse != nil {
		out.Coarse = slices.Concat(a.Coarse, b.Coarse)
	}
	if a.Domains != nil && b.Domains != nil {
		out.Domains = slices.Concat(a.Domains, b.Domains)
	}
	return &out
}
