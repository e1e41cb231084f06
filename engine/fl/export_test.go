package fl

import (
	"pfl/cuda"
	"pfl/engine/data"
	"pfl/engine/model"
)

// The run's internals that this package's external tests (package fl_test, which uses
// the built-in algorithms of engine/fl/algo) read and call. Tests of an algorithm alone
// live in engine/fl/algo and see a run only through its exported API.

var (
	CountResources = countResources
	NewEvalResult  = newEvalResult
	Share          = share
	Snapshot       = snapshot
	KNNLogits      = knnLogits
)

// Passes is what the resource table counts a training sample of s as.
func Passes(s Strategy) float64 { return hooksOf(s).passes() }

// EvalCounts are a chunk's per-client counts (evalCounts).
type EvalCounts struct{ Correct, Count, Loss []float64 }

func (r *Run) Global() model.Model                              { return r.global }
func (r *Run) Store() []*cuda.Tensor                            { return r.store }
func (r *Run) Stacked() model.Model                             { return r.stacked }
func (r *Run) EvalM() model.Model                               { return r.evalM }
func (r *Run) IsGen() []bool                                    { return r.isGen }
func (r *Run) PersonalFlags() []bool                            { return r.personal }
func (r *Run) TrainGroups() []model.Model                       { return r.groups.train }
func (r *Run) Config() Config                                   { return r.cfg }
func (r *Run) TrainSamples() data.Samples                       { return r.train }
func (r *Run) SampleN(round, n int) []int                       { return r.sampleN(round, n) }
func (r *Run) ServerClients(round int, ids []int) []int         { return r.serverClients(round, ids) }
func (r *Run) SingleModel() (model.Model, error)                { return r.singleModel() }
func (r *Run) Input(s *cuda.Scope, x *cuda.Tensor) *cuda.Tensor { return r.input(s, x) }

// ServerState is ServerHooks.State's tensors, none without the hook.
func (r *Run) ServerState() (names []string, tensors []*cuda.Tensor) {
	if r.hooks.server.State == nil {
		return nil, nil
	}
	return r.hooks.server.State()
}

func (r *Run) Load(s *cuda.Scope, m model.Model, ids []int) { r.load(s, m, ids) }

func (r *Run) LoadGenerated(s *cuda.Scope, m model.Model, generated []*cuda.Tensor) {
	r.loadGenerated(s, m, generated)
}

func (r *Run) TrainPhase(s *cuda.Scope, m model.Model, ids []int, round, phase int, ph Phase) error {
	_, _, err := r.trainPhase(s, m, ids, r.fed.Part.Train, round, phase, ph, nil)
	return err
}

func (r *Run) LocalTrain(s *cuda.Scope, m model.Model, ids []int, generated []*cuda.Tensor, round int, met *RoundMetrics) ([][]float64, float64, error) {
	return r.localTrain(s, m, ids, generated, round, met)
}

func (r *Run) TuneGenerator(cfg NovelConfig, params []*cuda.Tensor, m model.Model, ids []int, valid int, epochs []EvalResult) error {
	return r.tuneGenerator(cfg, params, m, ids, valid, epochs)
}

func (r *Run) TuneNovel(cfg NovelConfig, novel []int, epochs []EvalResult) (string, error) {
	return r.tuneNovel(cfg, novel, epochs)
}

// EvalStackedRows evaluates the stacked model's rows as they are (row i: client ids[i]).
func (r *Run) EvalStackedRows(ids []int) (EvalCounts, error) {
	s := cuda.NewScope()
	defer s.Close()
	e, err := r.evalModel(s, r.stacked, ids)
	return EvalCounts{e.correct, e.count, e.loss}, err
}
