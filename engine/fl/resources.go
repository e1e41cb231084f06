package fl

import "pfl/engine/model"

// Resources is what one client of a run stores, computes and communicates: FedPerfix's
// resource table (Table 2, right half) with exactly defined units, computed from the
// parameters' roles and the model's forward multiply-accumulates (MACs).
//
// The paper's own columns are not reproducible as defined: its "Computation (FLOPs)" of
// 65.65M for ViT-S/16 matches no count of that model (about 4.6 G forward MACs per
// 224×224 image), and its FedPerfix communication figure leaves out the last block the
// official code keeps local on CIFAR-100. These are pfl's definitions instead.
type Resources struct {
	// StoredParams is the trainable parameters a client's model holds (buffers such as
	// BatchNorm statistics are not counted): every part of a joined model (APFL's and
	// Ditto's two copies), plug-ins and personal heads included.
	StoredParams int64 `json:"stored_params"`
	// PersonalParams is the part of StoredParams that never leaves its client.
	PersonalParams int64 `json:"personal_params"`
	// UpParams and DownParams are the parameters one sampled client sends to the server
	// and receives from it per round: everything not personal (for FedTP, the generated
	// weights' change goes up and the generated weights come down, both counted).
	UpParams   int64 `json:"up_params"`
	DownParams int64 `json:"down_params"`
	// ForwardMACs is one sample's forward pass through the model that predicts.
	ForwardMACs float64 `json:"forward_macs"`
	// TrainFLOPs is one training sample's cost: 2 FLOPs per MAC, times 3 for a forward
	// and a backward pass (the backward pass of a linear map costs two forward ones),
	// times the algorithm's passes per sample (TrainHooks.Passes; 1 by default).
	TrainFLOPs float64 `json:"train_flops"`
}

// Resources counts the run's per-client resources.
func (r *Run) Resources() Resources {
	return countResources(r.global, r.hooks.passes(), r.personal)
}

// countResources counts m's parameters by whether personal[i] keeps them local, a training
// sample costing passes forward and backward passes.
func countResources(m model.Model, passes float64, personal []bool) Resources {
	var res Resources
	for i, p := range m.Params().List {
		if p.Buffer {
			continue
		}
		n := p.Numel()
		res.StoredParams += n
		if personal[i] {
			res.PersonalParams += n
		} else {
			res.UpParams += n
		}
	}
	res.DownParams = res.UpParams
	res.ForwardMACs = m.MACs()
	res.TrainFLOPs = 6 * res.ForwardMACs * passes
	return res
}
