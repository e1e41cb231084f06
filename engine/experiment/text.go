package experiment

import (
	"context"
	"fmt"
	"path/filepath"

	"pfl/cuda"
	"pfl/engine/config"
	"pfl/engine/data"
	"pfl/engine/dist"
	"pfl/engine/fl"
	"pfl/engine/model"
	"pfl/engine/rundir"
)

// prepareText is prepare for a character-level dataset (FedTP's Shakespeare): one client
// per role, the roles' own train/test sequences, a text model.
func prepareText(ctx context.Context, cfg config.Config, dev cuda.Device) (*session, error) {
	t, err := data.OpenText(cfg.Data.Dataset, cfg.Data.SeqLen)
	if err != nil {
		return nil, fmt.Errorf("data.dataset: %w", err)
	}
	tf, err := t.Federate(cfg.Data.Clients, cfg.Data.HoldOut, cfg.Seed)
	if err != nil {
		return nil, fmt.Errorf("data.clients: %w", err)
	}
	strat := cfg.Algorithm.Strategy() // the run's one strategy, as prepare's
	build, err := textBuilder(cfg, strat, int64(len(t.Vocab)), int64(tf.Train.Len), dev)
	if err != nil {
		return nil, err
	}
	floor, err := checkMemory(cfg, strat, build, dev)
	if err != nil {
		return nil, err
	}
	if err := interrupted(ctx, "loading the data"); err != nil {
		return nil, err
	}
	se := &session{floor: floor, manifest: func(dir string) error {
		return rundir.WriteJSON(filepath.Join(dir, "partition.json"), textManifest(t.Name, tf))
	}}
	train, err := data.UploadText(tf.Train, dev)
	if err != nil {
		return nil, err
	}
	test, err := data.UploadText(tf.Test, dev)
	if err != nil {
		train.Close()
		return nil, err
	}
	se.train, se.test = train, test
	if err := se.start(ctx, cfg, strat, tf.Fed, build, dev, dist.FromContext(ctx)); err != nil {
		return nil, err
	}
	return se, nil
}

// textPartition is a text run's partition.json: each client's role and sequence counts.
type textPartition struct {
	Dataset string   `json:"dataset"`
	Method  string   `json:"method"`
	SeqLen  int      `json:"seq_len"`
	Roles   []string `json:"roles"`
	Train   []int    `json:"train"`
	Test    []int    `json:"test"`
	Novel   []int    `json:"novel,omitempty"`
}

func textManifest(name string, tf *data.TextFederation) textPartition {
	m := textPartition{Dataset: name, Method: string(tf.Fed.Config.Method), SeqLen: tf.Train.Len, Roles: tf.IDs, Novel: tf.Fed.Part.Novel}
	for c := range tf.IDs {
		m.Train, m.Test = append(m.Train, len(tf.Fed.Part.Train[c])), append(m.Test, len(tf.Fed.Part.Test[c]))
	}
	return m
}

// textBuilder makes the text models: FedTP's Transformer (model.depth, dim, heads,
// head_dim and mlp resize it; causal) or the LEAF LSTM, for sequences of seqLen.
func textBuilder(cfg config.Config, strat fl.Strategy, vocab, seqLen int64, dev cuda.Device) (fl.Builder, error) {
	mc := cfg.Model
	p, err := model.Lookup(mc.Preset)
	if err != nil || !p.IsText() {
		return nil, fmt.Errorf("model.preset: %q does not read text; a text dataset takes text-transformer or lstm", mc.Preset)
	}
	s := mc.Spec()
	s.Vocab, s.SeqLen = vocab, seqLen
	s, err = shaped(cfg, strat, s)
	if err != nil {
		return nil, err
	}
	return modelBuilder(s, dev)
}
