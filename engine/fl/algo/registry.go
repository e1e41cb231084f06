package algo

import (
	"fmt"

	"pfl/engine/fl"
	"pfl/engine/model"
)

// builtin lists every built-in algorithm, one line each: its name, summary, paper, how to
// make it, the shared keys it reads and its own section. init registers them in this order
// (fl.Register); config validation, `pfl algorithms`, `pfl train -h` and
// docs/algorithms.md's table read them from engine/fl's registry.
var builtin = []fl.Algorithm{
	{Name: "fedavg", Summary: "average every parameter", Paper: "McMahan et al., AISTATS 2017, Alg. 1", New: func(fl.Options) fl.Strategy { return FedAvg() }, Keeps: fl.KeepNothing},
	{Name: "fedprox", Summary: "FedAvg plus a proximal term μ/2‖w − w_global‖² in the local loss", Paper: "Li et al., MLSys 2020, Eq. 2", New: func(o fl.Options) fl.Strategy { return FedProx{Mu: o.Mu} }, Keys: []string{"mu"}},
	{Name: "local", Summary: "every client trains alone; nothing is shared", Paper: "baseline (FedTP Table II \"Local-T\")", New: func(o fl.Options) fl.Strategy {
		if o.LocalSampled {
			return LocalSampled()
		}
		return Local()
	}, Keys: []string{fl.KeyLocalClients}, Keeps: fl.KeepEverything},
	{Name: "fedper", Summary: "the head stays with its client; the rest is averaged", Paper: "Arivazhagan et al., 2019, §3", New: func(fl.Options) fl.Strategy { return FedPer() }},
	{Name: "fedbn", Summary: "normalization layers and their statistics stay local", Paper: "Li et al., ICLR 2021, Alg. 1", New: func(fl.Options) fl.Strategy { return FedBN() }},
	{Name: "fedrep", Summary: "local head epochs, then body epochs; the body is averaged", Paper: "Collins et al., ICML 2021, Alg. 1", New: func(o fl.Options) fl.Strategy { return FedRep{ownOf[FedRepConfig](o)} }, Own: fl.OwnSection{Key: "fedrep", Default: FedRepConfig{}.Default()}, Check: checkFedRep},
	{Name: "fedbabu", Summary: "the head stays at its initialization; fine-tuned before evaluation", Paper: "Oh et al., ICLR 2022, §3", New: func(o fl.Options) fl.Strategy { return FedBABU{ownOf[FedBABUConfig](o)} }, Own: fl.OwnSection{Key: "fedbabu", Default: FedBABUConfig{}.Default()}},
	{Name: "vanilla-t", Summary: "attention Q/K/V stay local, everything else is averaged", Paper: "FedTP §III-B, Table II \"Vanilla Personalized-T\"", New: func(fl.Options) fl.Strategy { return VanillaPersonalizedT() }},
	{Name: "vanilla-attn", Summary: "all attention layers and the head stay local", Paper: "FedPerfix (Sun et al., ICCV 2023) §3, Table 2 \"Vanilla Attention\"", New: func(fl.Options) fl.Strategy { return VanillaAttention() }},
	{Name: "partial", Summary: "the roles and blocks of algorithm.local_roles / local_blocks stay local, the rest is averaged", Paper: "FedPerfix (Sun et al., ICCV 2023) §3.3, Table 1 (layer sensitivity)", New: func(o fl.Options) fl.Strategy {
		return partialOf("partial", o, nil, nil)
	}, Keys: []string{fl.KeyLocalRoles, fl.KeyLocalBlocks}, Keeps: fl.KeepListed, Check: checkPartial},
	{Name: "fedperfix", Summary: "prefix adapters (K/V offsets) in every block and the head stay local", Paper: "FedPerfix (Sun et al., ICCV 2023) §3.5, Eq. 4–5", New: FedPerfix, Keys: []string{fl.KeyLocalRoles, fl.KeyLocalBlocks}, PlugIn: fl.PlugInPrefix},
	{Name: "prefix-z", Summary: "zero-initialized vanilla prefixes (K/V offsets) in every block and the head stay local", Paper: "FedPerfix §5.3, Table 6 \"Prefix-Z\"", New: PrefixZ, Keys: []string{fl.KeyLocalRoles, fl.KeyLocalBlocks}, PlugIn: fl.PlugInPrefix},
	{Name: "prefix-r", Summary: "randomly initialized vanilla prefixes (K/V offsets) in every block and the head stay local", Paper: "FedPerfix §5.3, Table 6 \"Prefix-R\"", New: PrefixR, Keys: []string{fl.KeyLocalRoles, fl.KeyLocalBlocks}, PlugIn: fl.PlugInPrefix},
	{Name: "prompts", Summary: "deep prompt tokens in every block and the head stay local", Paper: "FedPerfix §5.3, Table 6 \"Prompts\"", New: PromptsVariant, Keys: []string{fl.KeyLocalRoles, fl.KeyLocalBlocks}},
	{Name: "adapters", Summary: "an adapter after every block's MLP and the head stay local", Paper: "FedPerfix §5.3, Table 6 \"Adapters\"", New: AdaptersVariant, Keys: []string{fl.KeyLocalRoles, fl.KeyLocalBlocks}, PlugIn: fl.PlugInAdapter},
	{Name: "fedrod", Summary: "a generic head (balanced softmax) and a personal head", Paper: "Chen & Chao, ICLR 2022, §4", New: func(o fl.Options) fl.Strategy { return &FedRoD{PlainSoftmax: o.PlainSoftmax} }, Keys: []string{"generic_loss"}},
	{Name: "fedtp", Summary: "a server hypernetwork generates each client's attention Q/K/V", Paper: "FedTP (Li et al., IEEE TNNLS 2023) §III-C, Alg. 1", New: func(o fl.Options) fl.Strategy { return fedTP(o) }, Keys: []string{"generate", "hyper"}},
	{Name: "fedtp-per", Summary: "FedTP with the head kept by each client", Paper: "FedTP §IV-B.6, Table VI \"FedTP+FedPer\"", New: func(o fl.Options) fl.Strategy {
		f := fedTP(o)
		f.Local = []model.Role{model.RoleHead}
		return f
	}, Keys: []string{"generate", "hyper"}},
	{Name: "fedtp-rod", Summary: "FedTP with FedRoD's personal head and balanced softmax", Paper: "FedTP §IV-B.6, Table VI \"FedTP+FedRoD\"", New: func(o fl.Options) fl.Strategy {
		f := fedTP(o)
		f.RoD = true
		return f
	}, Keys: []string{"generate", "hyper"}},
	{Name: "fedtp-knn", Summary: "FedTP whose evaluation mixes in a nearest-neighbour vote", Paper: "FedTP §IV-B.6, Table VI \"FedTP+KNN\"", New: func(o fl.Options) fl.Strategy {
		f := fedTP(o)
		f.KNN = ownOf[fl.KNN](o)
		return f
	}, Keys: []string{"generate", "hyper"}, Own: fl.OwnSection{Key: "knn", Default: fl.KNN{}.Default()}},
	{Name: "ditto", Summary: "a personal model trained on f(v) + λ/2‖v − w_global‖² beside the FedAvg model", Paper: "Li et al., ICML 2021, Alg. 1", New: func(o fl.Options) fl.Strategy { return &Ditto{DittoConfig: ownOf[DittoConfig](o)} }, Own: fl.OwnSection{Key: "ditto", Default: DittoConfig{}.Default()}},
	{Name: "apfl", Summary: "a local model mixed with the global one, α v + (1 − α) w, α learned per client", Paper: "Deng et al., arXiv:2003.13461, 2020, Alg. 1", New: func(o fl.Options) fl.Strategy { return &APFL{APFLConfig: ownOf[APFLConfig](o)} }, Own: fl.OwnSection{Key: "apfl", Default: APFLConfig{}.Default()}},
	{Name: "perfedavg", Summary: "FedAvg of the loss after one local adaptation step (MAML); evaluated after one step", Paper: "Fallah et al., NeurIPS 2020, Alg. 1 (FO and HF)", New: func(o fl.Options) fl.Strategy {
		return &PerFedAvg{PerFedAvgConfig: ownOf[PerFedAvgSettings](o).config()}
	}, Own: fl.OwnSection{Key: "perfedavg", Default: PerFedAvgSettings{}.Default()}},
	{Name: "pfedme", Summary: "personal models solve f(θ) + λ/2‖θ − w‖² on every batch; w moves towards them", Paper: "Dinh et al., NeurIPS 2020, Alg. 1", New: func(o fl.Options) fl.Strategy { return &PFedMe{PFedMeConfig: ownOf[PFedMeSettings](o).config()} }, Own: fl.OwnSection{Key: "pfedme", Default: PFedMeSettings{}.Default()}},
	{Name: "pfedgp", Summary: "a shared network embeds images; each client classifies with its own tree of Pólya-Gamma GPs fitted to its data", Paper: "Achituve et al., NeurIPS 2021, pFedGP-Full (no inducing points)", New: func(o fl.Options) fl.Strategy { return &PFedGP{PFedGPConfig: ownOf[PFedGPSettings](o).config()} }, Own: fl.OwnSection{Key: "pfedgp", Default: PFedGPSettings{}.Default()}},
	{Name: "pfedgp-ip", Summary: "pFedGP whose GPs are conditioned on shared, learned inducing inputs per class (with the client's data at evaluation)", Paper: "Achituve et al., NeurIPS 2021, pFedGP-IP-data", New: func(o fl.Options) fl.Strategy {
		return &PFedGPIP{PFedGP: PFedGP{PFedGPConfig: ownOf[PFedGPSettings](o).config()}}
	}, Own: fl.OwnSection{Key: "pfedgp", Default: PFedGPSettings{}.Default()}, Check: checkPFedGPIP},
	{Name: "transfed", Summary: "a server hypernetwork generates each client's focal modulation (f, context convolutions, h, proj) of a FocalNet", Paper: "TransFed (Ashraf et al., WACV 2024) §3.3, Alg. 1, Eq. 6–11", New: func(o fl.Options) fl.Strategy { return transFed(o) }, Keys: []string{"generate", "hyper"}},
	{Name: "pfedhn", Summary: "a server hypernetwork generates every weight of each client's model; K local steps, then one VJP of θ⁰ − θᴷ", Paper: "Shamsian et al., ICML 2021, §3, Alg. 1", New: func(o fl.Options) fl.Strategy { return pFedHN(o) }, Keys: []string{"hyper"}, Own: fl.OwnSection{Key: "pfedhn", Default: PFedHNConfig{}.Default()}, Check: checkPFedHN},
	{Name: "vanilla-c-t", Summary: "focal modulation (f, context convolutions, h, proj) stays local, everything else is averaged", Paper: "TransFed §3.2, Table 2 \"Vanilla-T\"", New: func(fl.Options) fl.Strategy { return VanillaCustomizedT() }},
}

func init() {
	for _, a := range builtin {
		if err := fl.Register(a); err != nil {
			panic(fmt.Sprintf("algo: registering the built-in algorithms: %v", err)) // a registry line contradicts another
		}
	}
}

// ownOf is the own section o carries, or T's zero value when it carries none (a program
// that makes a strategy from Options it wrote).
func ownOf[T fl.Section](o fl.Options) T {
	v, _ := o.Own.(T)
	return v
}
