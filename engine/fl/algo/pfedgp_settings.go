package algo

import (
	"fmt"

	"pfl/engine/fl"
	"pfl/engine/internal/check"
)

// PFedGPSettings are pFedGP's config keys, algorithm.pfedgp (its official code's defaults,
// pFedGP-Full on CIFAR: experiments/heterogeneous_class_dist/trainer.py); pfedgp-ip reads
// them too.
type PFedGPSettings struct {
	// EmbedDim is the embedding's width: the model's head is built with this many outputs
	// and becomes the embedding the GPs read (the official backbone's embed_dim layer);
	// default 84 (--embed-dim).
	EmbedDim int64 `mapstructure:"embed_dim" json:"embed_dim"`
	// OutputScale and LengthScale are the RBF kernel's s and ℓ on L2-normalized
	// embeddings, fixed (the official code never trains them); defaults 8 and 1.
	OutputScale float64 `mapstructure:"outputscale" json:"outputscale"`
	LengthScale float64 `mapstructure:"lengthscale" json:"lengthscale"`
	// GibbsDraws and GibbsSteps are the parallel Gibbs chains and their sweeps per node in
	// training; defaults 20 and 5 (--num-gibbs-draws-train, --num-gibbs-steps-train).
	GibbsDraws int `mapstructure:"gibbs_draws" json:"gibbs_draws"`
	GibbsSteps int `mapstructure:"gibbs_steps" json:"gibbs_steps"`
	// EvalGibbsDraws and EvalGibbsSteps are the same at evaluation; defaults 30 and 5.
	EvalGibbsDraws int `mapstructure:"eval_gibbs_draws" json:"eval_gibbs_draws"`
	EvalGibbsSteps int `mapstructure:"eval_gibbs_steps" json:"eval_gibbs_steps"`
	// Objective is "predictive" (the held-out part's predictive cross-entropy, the
	// official default) or "marginal" (the augmented marginal likelihood); default
	// predictive.
	Objective string `mapstructure:"objective" json:"objective"`
	// PredictRatio is the fraction of each branch's samples held out by the predictive
	// objective; default 0.5 (--predict-ratio).
	PredictRatio float64 `mapstructure:"predict_ratio" json:"predict_ratio"`
	// Inducing is pfedgp-ip's number of inducing inputs per class, shared by all clients
	// and learned in the embedding space; default 100 (the official
	// --num-inducing-points). Other algorithms do not read it.
	Inducing int `mapstructure:"inducing" json:"inducing"`
	// Weights is how the server weighs the round's clients in its mean: "uniform" (the
	// official trainers: the summed parameters divided by --num-client-agg) or "samples"
	// (m_i/M, as every other algorithm); default uniform.
	Weights string `mapstructure:"weights" json:"weights"`
	// LossScaler multiplies every client's loss before the step (--loss-scaler); default 1,
	// the official default (its pFedGP-IP-data CIFAR-10 script passes 2).
	LossScaler float64 `mapstructure:"loss_scaler" json:"loss_scaler"`
	// Clip bounds the L2 norm of each client's gradient before every step (the official
	// clip_grad_norm_(·, 50) in both trainers); default 50; 0: none.
	Clip float64 `mapstructure:"clip" json:"clip"`
}

// Default is the official trainer's setting.
func (PFedGPSettings) Default() PFedGPSettings {
	return PFedGPSettings{EmbedDim: 84, OutputScale: 8, LengthScale: 1, GibbsDraws: 20, GibbsSteps: 5,
		EvalGibbsDraws: 30, EvalGibbsSteps: 5, Objective: "predictive", PredictRatio: 0.5, Inducing: 100,
		Weights: "uniform", LossScaler: 1, Clip: 50}
}

// Validate reports a value pFedGP cannot run with, naming its config key.
func (c PFedGPSettings) Validate() error {
	k := &check.Checker{}
	k.AtLeast("algorithm.pfedgp.embed_dim", c.EmbedDim, 1)
	k.Real("algorithm.pfedgp.outputscale", c.OutputScale, 0, check.Inf, "(]")
	k.Real("algorithm.pfedgp.lengthscale", c.LengthScale, 0, check.Inf, "(]")
	k.AtLeast("algorithm.pfedgp.gibbs_draws", int64(c.GibbsDraws), 1)
	k.AtLeast("algorithm.pfedgp.gibbs_steps", int64(c.GibbsSteps), 0)
	k.AtLeast("algorithm.pfedgp.eval_gibbs_draws", int64(c.EvalGibbsDraws), 1)
	k.AtLeast("algorithm.pfedgp.eval_gibbs_steps", int64(c.EvalGibbsSteps), 0)
	k.OneOf("algorithm.pfedgp.objective", c.Objective, "predictive", "marginal")
	k.Real("algorithm.pfedgp.predict_ratio", c.PredictRatio, 0, 1, "()")
	k.AtLeast("algorithm.pfedgp.inducing", int64(c.Inducing), 1)
	k.OneOf("algorithm.pfedgp.weights", c.Weights, "uniform", "samples")
	k.Real("algorithm.pfedgp.loss_scaler", c.LossScaler, 0, check.Inf, "()")
	k.Real("algorithm.pfedgp.clip", c.Clip, 0, check.Inf, "[]")
	return k.Err()
}

// config is the setting the algorithm runs with.
func (c PFedGPSettings) config() PFedGPConfig {
	return PFedGPConfig{EmbedDim: c.EmbedDim, OutputScale: c.OutputScale, LengthScale: c.LengthScale,
		Draws: c.GibbsDraws, Steps: c.GibbsSteps, EvalDraws: c.EvalGibbsDraws, EvalSteps: c.EvalGibbsSteps,
		Objective: c.Objective, PredictRatio: c.PredictRatio, Inducing: c.Inducing, Uniform: c.Weights == "uniform",
		LossScaler: c.LossScaler, Clip: c.Clip}
}

// settings is c as config keys, for Validate.
func (c PFedGPConfig) settings() PFedGPSettings {
	weights := "samples"
	if c.Uniform {
		weights = "uniform"
	}
	return PFedGPSettings{EmbedDim: c.EmbedDim, OutputScale: c.OutputScale, LengthScale: c.LengthScale,
		GibbsDraws: c.Draws, GibbsSteps: c.Steps, EvalGibbsDraws: c.EvalDraws, EvalGibbsSteps: c.EvalSteps,
		Objective: c.Objective, PredictRatio: c.PredictRatio, Inducing: c.Inducing, Weights: weights,
		LossScaler: c.LossScaler, Clip: c.Clip}
}

// checkPFedGPIP is pfedgp-ip's check across keys (its registry entry): the inducing-point
// variant trains the predictive objective only.
func checkPFedGPIP(_ fl.Settings, own fl.Section, _ int) error {
	return predictiveOnly(own.(PFedGPSettings).Objective)
}

func predictiveOnly(objective string) error {
	if objective != "predictive" {
		return fmt.Errorf("algorithm.pfedgp.objective: %q, but algorithm pfedgp-ip trains the predictive objective only", objective)
	}
	return nil
}
