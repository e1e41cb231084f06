package experiment

import (
	"encoding/json"

	"pfl/engine/fl"

	"pfl/engine/internal/jsonfloat"
)

// summaryJSON is Summary as summary.json holds it: the same keys, with floats that JSON
// can hold whatever their value (an accuracy over no samples is NaN).
type summaryJSON struct {
	Name          string          `json:"name"`
	Algorithm     string          `json:"algorithm,omitempty"`
	Seed          uint64          `json:"seed"`
	Member        string          `json:"member,omitempty"`
	Sweep         []SweepValue    `json:"sweep,omitempty"`
	Rounds        int             `json:"rounds"`
	FinalMicro    jsonfloat.Float `json:"final_micro"`
	FinalMean     jsonfloat.Float `json:"final_mean"`
	FinalStd      jsonfloat.Float `json:"final_std"`
	P10           jsonfloat.Float `json:"p10"`
	P50           jsonfloat.Float `json:"p50"`
	P90           jsonfloat.Float `json:"p90"`
	Worst10       jsonfloat.Float `json:"worst10"`
	TailMean      jsonfloat.Float `json:"tail_mean"`
	TailStd       jsonfloat.Float `json:"tail_std"`
	TailEvals     int             `json:"tail_evals"`
	TailTrend     jsonfloat.Float `json:"tail_trend"`
	Best          jsonfloat.Float `json:"best_micro"`
	BestRound     int             `json:"best_round"`
	Falling       string          `json:"falling,omitempty"`
	ClientUpdates int             `json:"client_updates"`
	SamplesPerSec jsonfloat.Float `json:"samples_per_sec"`
	WallSeconds   jsonfloat.Float `json:"wall_seconds"`
	Diverged      int             `json:"diverged_at_round,omitempty"`
	Novel         []novelJSON     `json:"novel,omitempty"`
	EvalProtocol  string          `json:"eval_protocol"`
	Resources     fl.Resources    `json:"resources"`
}

type novelJSON struct {
	Tuned string            `json:"tuned"`
	Micro []jsonfloat.Float `json:"micro"`
	Mean  []jsonfloat.Float `json:"mean"`
	Std   []jsonfloat.Float `json:"std"`
}

// MarshalJSON writes the summary; non-finite values become "NaN", "+Inf" or "-Inf".
func (s Summary) MarshalJSON() ([]byte, error) {
	f := func(v float64) jsonfloat.Float { return jsonfloat.Float(v) }
	j := summaryJSON{Name: s.Name, Algorithm: s.Algorithm, Seed: s.Seed, Member: s.Member, Sweep: s.Sweep, Rounds: s.Rounds, FinalMicro: f(s.FinalMicro), FinalMean: f(s.FinalMean),
		FinalStd: f(s.FinalStd), P10: f(s.P10), P50: f(s.P50), P90: f(s.P90), Worst10: f(s.Worst10),
		TailMean: f(s.TailMean), TailStd: f(s.TailStd), TailEvals: s.TailEvals, TailTrend: f(s.TailTrend), Best: f(s.Best), BestRound: s.BestRound, Falling: s.Falling, ClientUpdates: s.ClientUpdates,
		SamplesPerSec: f(s.SamplesPerSec), WallSeconds: f(s.WallSeconds), Diverged: s.Diverged, EvalProtocol: s.EvalProtocol,
		Resources: s.Resources}
	for _, n := range s.Novel {
		j.Novel = append(j.Novel, novelJSON{Tuned: n.Tuned, Micro: jsonfloat.Slice(n.Micro),
			Mean: jsonfloat.Slice(n.Mean), Std: jsonfloat.Slice(n.Std)})
	}
	return json.Marshal(j)
}

// UnmarshalJSON reads what MarshalJSON writes.
func (s *Summary) UnmarshalJSON(b []byte) error {
	var j summaryJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*s = Summary{Name: j.Name, Algorithm: j.Algorithm, Seed: j.Seed, Member: j.Member, Sweep: j.Sweep, Rounds: j.Rounds, FinalMicro: float64(j.FinalMicro), FinalMean: float64(j.FinalMean),
		FinalStd: float64(j.FinalStd), P10: float64(j.P10), P50: float64(j.P50), P90: float64(j.P90),
		Worst10: float64(j.Worst10), TailMean: float64(j.TailMean), TailStd: float64(j.TailStd), TailEvals: j.TailEvals, TailTrend: float64(j.TailTrend), Best: float64(j.Best), BestRound: j.BestRound, Falling: j.Falling, ClientUpdates: j.ClientUpdates,
		SamplesPerSec: float64(j.SamplesPerSec), WallSeconds: float64(j.WallSeconds), Diverged: j.Diverged, EvalProtocol: j.EvalProtocol,
		Resources: j.Resources}
	for _, n := range j.Novel {
		s.Novel = append(s.Novel, NovelSummary{Tuned: n.Tuned, Micro: jsonfloat.Float64s(n.Micro),
			Mean: jsonfloat.Float64s(n.Mean), Std: jsonfloat.Float64s(n.Std)})
	}
	return nil
}
