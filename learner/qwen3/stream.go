package qwen3

import (
	"math/rand/v2"
	"slices"

	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/gomlxtrain"
	"github.com/t2t-lab/t2t/learner/hfmodel"
)

// GenerateStream is Generate with a callback: onToken sees every sampled token as soon as it
// is sampled, row by row within a step, and may end its row by returning true (the row is then
// reported as Stopped, as if a stop token had ended it). Use it to stream tokens, to stop on
// strings rather than tokens, or to give up when a client disconnects: once every row has
// ended no further decode step runs. topLogProbs ≥ 0 asks for that many alternatives per
// token in TokenEvent.Top. With a callback that never returns true, the result equals
// Generate's for the same arguments and rng state.
func (m *Model) GenerateStream(prompts [][]int32, sc engine.SampleConfig, topLogProbs int, rng *rand.Rand, onToken func(engine.TokenEvent) bool) (*engine.Generation, error) {
	if err := engine.CheckGenerate(m.cfg, prompts, sc, topLogProbs, rng != nil); err != nil {
		return nil, err
	}
	maxP := 0
	for _, p := range prompts {
		maxP = max(maxP, len(p))
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if err := m.buildGenExecs(); err != nil {
		return nil, err
	}
	n := len(prompts)
	b, p, s := hfmodel.GenerateShape(n, maxP, sc.MaxNewTokens)
	tok, valid, pad := leftPadPrompts(prompts, b, p)
	gen := &engine.Generation{Tokens: make([][]int32, n), LogProbs: make([][]float32, n), Stopped: make([]bool, n)}
	v := m.cfg.VocabSize
	smp := engine.NewSampler(sc, v)
	next := make([]int32, b)
	var caches []*tensors.Tensor
	defer func() { finalize(caches) }()
	logits := make([]float32, b*v)
	run := func(e *context.Exec, args ...any) error {
		return gomlxtrain.Catch(func() {
			outs, err := e.Exec(args...)
			if err != nil {
				panic(err)
			}
			tensors.MustConstFlatData(outs[0], func(flat []float32) { copy(logits, flat) })
			_ = outs[0].FinalizeAll()
			finalize(caches)
			caches = outs[1:]
		})
	}
	err := run(m.prefillExec, tensors.FromFlatDataAndDimensions(tok, b, p), tensors.FromFlatDataAndDimensions(valid, b, p),
		tensors.FromShape(shapes.Make(dtypes.Int32, s)))
	if err != nil {
		return nil, err
	}
	padT := tensors.FromFlatDataAndDimensions(pad, b)
	defer func() { _ = padT.FinalizeAll() }()
	done := make([]bool, n)
	st := sampleStep{smp: smp, sc: sc, topLogProbs: topLogProbs, rng: rng, onToken: onToken}
	for step := 0; step < sc.MaxNewTokens; step++ {
		active := st.run(gen, done, next, logits, v, step)
		if active == 0 || step == sc.MaxNewTokens-1 {
			break
		}
		args := []any{tensors.FromFlatDataAndDimensions(next, b), padT, tensors.FromScalar(int32(p + step))}
		for _, c := range caches {
			args = append(args, c)
		}
		if err := run(m.decodeExec, args...); err != nil {
			return nil, err
		}
	}
	return gen, nil
}

// leftPadPrompts lays prompts out as a b×p batch, each row right-aligned (left padding), and
// returns the tokens, the validity mask and each row's padding length; rows past the prompts
// are all padding.
func leftPadPrompts(prompts [][]int32, b, p int) (tok, valid, pad []int32) {
	tok = make([]int32, b*p)
	valid = make([]int32, b*p)
	pad = make([]int32, b)
	for i := range b {
		pad[i] = int32(p)
		if i < len(prompts) {
			pad[i] = int32(p - len(prompts[i]))
			copy(tok[i*p+int(pad[i]):], prompts[i])
			for j := int(pad[i]); j < p; j++ {
				valid[i*p+j] = 1
			}
		}
	}
	return tok, valid, pad
}

// sampleStep samples one token for every row that has not ended, in row order.
type sampleStep struct {
	smp         *engine.Sampler
	sc          engine.SampleConfig
	topLogProbs int
	rng         *rand.Rand
	onToken     func(engine.TokenEvent) bool
	top         []engine.TokenLogProb // reused buffer for TokenEvent.Top
}

// run appends each live row's sampled token and log-prob to gen, writes it to next, marks rows
// that stop (a stop token, or onToken returning true) as done and Stopped, and returns how many
// rows are still live.
func (st *sampleStep) run(gen *engine.Generation, done []bool, next []int32, logits []float32, v, step int) int {
	active := 0
	for i := range done {
		if done[i] {
			continue
		}
		t, lp := st.smp.Sample(logits[i*v:(i+1)*v], st.rng)
		gen.Tokens[i] = append(gen.Tokens[i], t)
		gen.LogProbs[i] = append(gen.LogProbs[i], lp)
		next[i] = t
		stop := slices.Contains(st.sc.StopTokens, t)
		if st.onToken != nil {
			if st.topLogProbs > 0 {
				st.top = st.smp.Top(st.topLogProbs, st.top)
			}
			if st.onToken(engine.TokenEvent{Row: i, Step: step, Token: t, LogProb: lp, Top: st.top}) {
				stop = true
			}
		}
		if stop {
			done[i], gen.Stopped[i] = true, true
		} else {
			active++
		}
	}
	return active
}
