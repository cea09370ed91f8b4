package torch

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// Model is the torch engine: a Qwen3 model held by a worker process. It implements
// engine.Model. If the worker dies, every later call returns a *DiedError; the weights the
// worker held are lost, so a run resumes from its last checkpoint.
type Model struct {
	wk       *Worker
	cfg      hfmodel.Config
	srcDir   string // tokenizer files Save copies
	lora     *hfmodel.LoRAConfig
	device   string
	autocast string
	actCkpt  bool   // engine.Spec.ActivationCheckpointing
	pool     [2]int // slots and slot length of the open decoder pool (decoder.go); zero: none
}

// Load starts a worker as spec says and loads the Hugging Face directory dir into it. The
// configuration is read and checked here first (qwen3.LoadConfig), so a bad config.json is the
// same typed error as on the gomlx engine and no worker starts.
func Load(ctx context.Context, spec engine.Spec, dir string) (*Model, error) {
	cfg, abs, err := readModelDir(dir)
	if err != nil {
		return nil, err
	}
	m, err := start(ctx, spec, cfg)
	if err != nil {
		return nil, err
	}
	if err := m.loadDir(abs); err != nil {
		_ = m.wk.Close()
		return nil, fmt.Errorf("torch: load %s: %w", dir, err)
	}
	return m, nil
}

// readModelDir reads and checks dir's config (hfmodel.LoadConfig) and makes dir absolute, for
// a worker's load request.
func readModelDir(dir string) (hfmodel.Config, string, error) {
	cfg, err := hfmodel.LoadConfig(dir)
	if err != nil {
		return cfg, "", err
	}
	abs, err := filepath.Abs(dir)
	return cfg, abs, err
}

// loadDir loads the model directory abs into m's worker.
func (m *Model) loadDir(abs string) error {
	if err := m.wk.call("load", m.placement(map[string]any{"dir": abs}), nil, nil); err != nil {
		return err
	}
	m.srcDir = abs
	return nil
}

// initRandom builds a random model of fields (configFields) from seed in m's worker.
func (m *Model) initRandom(fields map[string]any, seed uint64) error {
	return m.wk.call("init", m.placement(map[string]any{"config": fields, "seed": seed}), nil, nil)
}

// NewRandom starts a worker and builds a model of cfg with random weights in the worker's
// memory (normal(0, 0.02); not the gomlx engine's draw), for benchmarks.
func NewRandom(ctx context.Context, spec engine.Spec, cfg hfmodel.Config, seed uint64) (*Model, error) {
	fields, err := configFields(cfg)
	if err != nil {
		return nil, err
	}
	m, err := start(ctx, spec, cfg)
	if err != nil {
		return nil, err
	}
	if err := m.initRandom(fields, seed); err != nil {
		_ = m.wk.Close()
		return nil, fmt.Errorf("torch: init: %w", err)
	}
	return m, nil
}

// configFields is cfg, once checked (Config.Validate), as the init request's config map.
func configFields(cfg hfmodel.Config) (map[string]any, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	js, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	// Integers stay integers on the wire (json.Unmarshal would make every number a float64).
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.UseNumber()
	var fields map[string]any
	if err := dec.Decode(&fields); err != nil {
		return nil, err
	}
	for k, v := range fields {
		if n, ok := v.(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				fields[k] = i
			} else if f, err := n.Float64(); err == nil {
				fields[k] = f
			}
		}
	}
	return fields, nil
}

func start(ctx context.Context, spec engine.Spec, cfg hfmodel.Config) (*Model, error) {
	spec.Kind = engine.Torch
	if err := spec.Validate(); err != nil {
		return nil, err
	}
	device := spec.Ranks()[0]
	py, err := FindPython(ctx, spec.Python)
	if err != nil {
		return nil, err
	}
	wk, err := StartWorker(ctx, WorkerOptions{Python: py, Device: device, Threads: spec.Threads, Log: spec.Log})
	if err != nil {
		return nil, err
	}
	return &Model{wk: wk, cfg: cfg, device: device, autocast: spec.Autocast, actCkpt: spec.ActivationCheckpointing}, nil
}

// placement adds the device, autocast and memory options to a load or init request.
func (m *Model) placement(req map[string]any) map[string]any {
	req["device"], req["autocast"], req["activation_checkpointing"] = m.device, m.autocast, m.actCkpt
	return req
}

// Worker returns the model's worker process.
func (m *Model) Worker() *Worker { return m.wk }

// Engine implements engine.Model.
func (m *Model) Engine() string { return engine.Torch }

// Device implements engine.Model: the worker's device, torch version and BLAS kernel.
func (m *Model) Device() string {
	h := m.wk.Hello()
	s := fmt.Sprintf("%s (torch %s, python %s, %d threads", h.Device, h.Torch, h.Python, h.Threads)
	if h.BLAS.Kernel != "" {
		s += ", OpenBLAS " + h.BLAS.Kernel
	}
	return s + ")"
}

// Config implements engine.Model.
func (m *Model) Config() hfmodel.Config { return m.cfg }

// tokenEvent is one decode step of a streamed generate.
type tokenEvent struct {
	Step     int       `msgpack:"step"`
	Tokens   []int64   `msgpack:"tokens"`
	LogProbs []float64 `msgpack:"logprobs"`
	Top      [][][]any `msgpack:"top"`
}

type genReply struct {
	Tokens    [][]byte `msgpack:"tokens"`
	LogProbs  [][]byte `msgpack:"logprobs"`
	Stopped   []bool   `msgpack:"stopped"`
	Cancelled bool     `msgpack:"cancelled"`
}

// GenerateStream implements engine.Model. Sampling runs in the worker from a seed drawn from
// rng; an onToken that ends a row sends the worker a cancel for it, and tokens the worker
// produced for that row after it are dropped, so the result is the same as the gomlx engine's
// for the same tokens.
func (m *Model) GenerateStream(prompts [][]int32, sc engine.SampleConfig, topLogProbs int, rng *rand.Rand, onToken func(engine.TokenEvent) bool) (*engine.Generation, error) {
	if err := engine.CheckGenerate(m.cfg, prompts, sc, topLogProbs, rng != nil); err != nil {
		return nil, err
	}
	var seed uint64
	if rng != nil {
		seed = rng.Uint64()
	}
	stop := make([]int64, len(sc.StopTokens))
	for i, s := range sc.StopTokens {
		stop[i] = int64(s)
	}
	stream := onToken != nil
	req := map[string]any{
		"prompts": rowsI32(prompts), "max_new_tokens": sc.MaxNewTokens, "temperature": sc.Temperature,
		"top_k": sc.TopK, "top_p": sc.TopP, "stop": stop, "seed": seed, "stream": stream, "top_logprobs": topLogProbs,
	}
	n := len(prompts)
	delivered := make([]int, n) // tokens passed to onToken per row
	ended := make([]bool, n)    // rows onToken ended
	nEnded := 0
	var top []engine.TokenLogProb
	onEvent := func(body []byte, send func(map[string]any) error) error {
		var ev tokenEvent
		if err := msgpack.Unmarshal(body, &ev); err != nil || len(ev.Tokens) != n || len(ev.LogProbs) != n {
			m.wk.kill()
			return fmt.Errorf("%w: generate: malformed token event (%v)", ErrProtocol, err)
		}
		var cancel []int
		for r := range n {
			if ev.Tokens[r] < 0 || ended[r] {
				continue
			}
			te := engine.TokenEvent{Row: r, Step: ev.Step, Token: int32(ev.Tokens[r]), LogProb: float32(ev.LogProbs[r])}
			if topLogProbs > 0 && r < len(ev.Top) {
				top = top[:0]
				for _, pair := range ev.Top[r] {
					if len(pair) == 2 {
						top = append(top, engine.TokenLogProb{Token: int32(num(pair[0])), LogProb: float32(num(pair[1]))})
					}
				}
				te.Top = top
			}
			delivered[r]++
			if onToken(te) {
				ended[r] = true
				nEnded++
				cancel = append(cancel, r)
			}
		}
		if len(cancel) > 0 {
			return send(cancelMsg(m.wk, cancel, nEnded == n))
		}
		return nil
	}
	var rep genReply
	if !stream {
		onEvent = nil
	}
	if err := m.wk.call("generate", req, &rep, onEvent); err != nil {
		return nil, err
	}
	if len(rep.Tokens) != n || len(rep.LogProbs) != n || len(rep.Stopped) != n {
		m.wk.kill()
		return nil, fmt.Errorf("%w: generate: %d token rows for %d prompts", ErrProtocol, len(rep.Tokens), n)
	}
	gen := &engine.Generation{Tokens: make([][]int32, n), LogProbs: make([][]float32, n), Stopped: slices.Clone(rep.Stopped)}
	for r := range n {
		t, err := bytesI32(rep.Tokens[r])
		if err != nil {
			return nil, err
		}
		lp, err := bytesF32(rep.LogProbs[r])
		if err != nil || len(lp) != len(t) {
			m.wk.kill()
			return nil, fmt.Errorf("%w: generate: row %d has %d log-probs for %d tokens", ErrProtocol, r, len(lp), len(t))
		}
		if ended[r] && len(t) > delivered[r] {
			t, lp = t[:delivered[r]], lp[:delivered[r]]
		}
		if ended[r] {
			gen.Stopped[r] = true
		}
		gen.Tokens[r], gen.LogProbs[r] = t, lp
	}
	return gen, nil
}

// cancelMsg is the cancel frame for the running request (the worker's current id) ending rows,
// or the whole generation when all rows have ended.
func cancelMsg(wk *Worker, rows []int, all bool) map[string]any {
	msg := map[string]any{"op": "cancel", "target": wk.nextID}
	if !all {
		msg["rows"] = rows
	}
	return msg
}

func num(v any) float64 {
	switch x := v.(type) {
	case int8:
		return float64(x)
	case int16:
		return float64(x)
	case int32:
		return float64(x)
	case int64:
		return float64(x)
	case uint8:
		return float64(x)
	case uint16:
		return float64(x)
	case uint32:
		return float64(x)
	case uint64:
		return float64(x)
	case float32:
		return float64(x)
	case float64:
		return x
	}
	return 0
}

// Logits implements engine.Model.
func (m *Model) Logits(seqs [][]int32) ([][]float32, error) {
	if len(seqs) == 0 {
		return nil, nil
	}
	for i, s := range seqs {
		if len(s) == 0 {
			return nil, fmt.Errorf("%w: sequence %d is empty", learner.ErrBadBatch, i)
		}
		if err := m.cfg.CheckTokens(s); err != nil {
			return nil, fmt.Errorf("sequence %d: %w", i, err)
		}
	}
	var rep struct {
		Logits [][]byte `msgpack:"logits"`
	}
	if err := m.wk.call("logits", map[string]any{"seqs": rowsI32(seqs)}, &rep, nil); err != nil {
		return nil, err
	}
	if len(rep.Logits) != len(seqs) {
		m.wk.kill()
		return nil, fmt.Errorf("%w: logits: %d rows for %d sequences", ErrProtocol, len(rep.Logits), len(seqs))
	}
	out := make([][]float32, len(seqs))
	for i, b := range rep.Logits {
		f, err := bytesF32(b)
		if err != nil || len(f) != len(seqs[i])*m.cfg.VocabSize {
			m.wk.kill()
			return nil, fmt.Errorf("%w: logits: row %d has %d values, want %d", ErrProtocol, i, len(f), len(seqs[i])*m.cfg.VocabSize)
		}
		out[i] = f
	}
	return out, nil
}

// batchMap encodes a qwen3.NewSeqBatch layout (inputs: token ids, validity).
func (m *Model) batchMap(b *learner.SeqBatch) (map[string]any, error) {
	if b == nil || b.Rows < 1 || b.T < 1 {
		return nil, fmt.Errorf("%w: need Rows ≥ 1 and T ≥ 1", learner.ErrBadBatch)
	}
	n := b.Rows * b.T
	if len(b.Inputs) != 2 || len(b.Inputs[0].I32) != n || len(b.Inputs[1].I32) != n {
		return nil, fmt.Errorf("%w: want 2 int32 inputs (token ids, validity) of %d values", learner.ErrBadBatch, n)
	}
	if err := m.cfg.CheckTokens(b.Inputs[0].I32); err != nil {
		return nil, err
	}
	mask := b.Mask
	if mask == nil {
		mask = make([]float32, n)
		for i := range mask {
			mask[i] = 1
		}
	}
	return map[string]any{
		"rows": b.Rows, "t": b.T, "tokens": i32Bytes(b.Inputs[0].I32), "valid": i32Bytes(b.Inputs[1].I32),
		"actions": i32Bytes(b.Actions), "mask": f32Bytes(mask), "behaviour": f32Bytes(b.BehaviourLogProbs),
		"advantages": f32Bytes(b.Advantages), "ref": f32Bytes(b.RefLogProbs), "tail": b.Tail,
	}, nil
}

// LogProbs implements engine.Model.
func (m *Model) LogProbs(b *learner.SeqBatch) ([]float32, error) {
	bm, err := m.batchMap(b)
	if err != nil {
		return nil, err
	}
	var rep struct {
		LogProbs []byte `msgpack:"logprobs"`
	}
	if err := m.wk.call("logprobs", map[string]any{"batch": bm}, &rep, nil); err != nil {
		return nil, err
	}
	lp, err := bytesF32(rep.LogProbs)
	if err != nil || len(lp) != b.Rows*b.T {
		m.wk.kill()
		return nil, fmt.Errorf("%w: logprobs: %d values for %d positions", ErrProtocol, len(lp), b.Rows*b.T)
	}
	return lp, nil
}

// SetTrainConfig implements engine.Model.
func (m *Model) SetTrainConfig(cfg learner.GRPOConfig) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	req := map[string]any{
		"clip_eps": cfg.ClipEps, "is_cap": cfg.ISCap, "kl_coef": cfg.KLCoef, "lr": cfg.LR,
		"weight_decay": cfg.WeightDecay, "max_grad_norm": cfg.MaxGradNorm, "micro_batch": cfg.MicroBatch,
	}
	return m.wk.call("train_config", req, nil, nil)
}

type stepReply struct {
	Loss         float64 `msgpack:"loss"`
	Positions    int     `msgpack:"positions"`
	ClipFrac     float64 `msgpack:"clip_frac"`
	ApproxKL     float64 `msgpack:"approx_kl"`
	MeanRatio    float64 `msgpack:"mean_ratio"`
	RefKL        float64 `msgpack:"ref_kl"`
	MeanAbsAdv   float64 `msgpack:"mean_abs_adv"`
	Accuracy     float64 `msgpack:"accuracy"`
	Entropy      float64 `msgpack:"entropy"`
	GradNorm     float64 `msgpack:"grad_norm"`
	MicroBatches int     `msgpack:"micro_batches"`
	Step         int64   `msgpack:"step"`
}

// Step implements engine.Model.
func (m *Model) Step(kind engine.StepKind, b *learner.SeqBatch) (learner.UpdateStats, error) {
	bm, err := m.batchMap(b)
	if err != nil {
		return learner.UpdateStats{}, err
	}
	return m.step(kind, bm)
}

// step sends a step request with batch bm (a rank's share; nil: no rows, on a Group).
func (m *Model) step(kind engine.StepKind, bm map[string]any) (learner.UpdateStats, error) {
	var rep stepReply
	if err := m.wk.call("step", map[string]any{"kind": kind.String(), "batch": bm}, &rep, nil); err != nil {
		return learner.UpdateStats{}, err
	}
	return learner.UpdateStats{
		Loss: rep.Loss, Positions: rep.Positions, ClipFrac: rep.ClipFrac, ApproxKL: rep.ApproxKL,
		MeanRatio: rep.MeanRatio, RefKL: rep.RefKL, MeanAbsAdv: rep.MeanAbsAdv, Accuracy: rep.Accuracy,
		Entropy: rep.Entropy, GradNorm: rep.GradNorm, MicroBatches: rep.MicroBatches, Step: rep.Step,
	}, nil
}

// AddLoRA implements engine.Model.
func (m *Model) AddLoRA(cfg hfmodel.LoRAConfig, seed uint64) error {
	if err := cfg.Validate(); err != nil {
		return err
	}
	if m.lora != nil {
		return fmt.Errorf("torch: AddLoRA: %w: adapters already attached", learner.ErrInvalidConfig)
	}
	req := map[string]any{"rank": cfg.Rank, "alpha": cfg.Alpha, "targets": cfg.Targets, "seed": seed}
	if err := m.wk.call("add_lora", req, nil, nil); err != nil {
		return err
	}
	c := cfg
	c.Targets = slices.Clone(cfg.Targets)
	m.lora = &c
	return nil
}

// LoRA implements engine.Model.
func (m *Model) LoRA() (hfmodel.LoRAConfig, bool) {
	if m.lora == nil {
		return hfmodel.LoRAConfig{}, false
	}
	c := *m.lora
	c.Targets = slices.Clone(c.Targets)
	return c, true
}

// LoadAdapter implements engine.Model.
func (m *Model) LoadAdapter(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	var rep struct {
		Rank    int      `msgpack:"rank"`
		Alpha   float64  `msgpack:"alpha"`
		Targets []string `msgpack:"targets"`
	}
	if err := m.wk.call("load_adapter", map[string]any{"dir": abs}, &rep, nil); err != nil {
		return err
	}
	m.lora = &hfmodel.LoRAConfig{Rank: rep.Rank, Alpha: rep.Alpha, Targets: rep.Targets}
	return nil
}

// UnloadAdapter implements engine.AdapterUnloader: the attached adapters are removed and the
// model computes what it did before they were attached; with none attached it is an error
// wrapping learner.ErrInvalidConfig and changes nothing.
func (m *Model) UnloadAdapter() error {
	if m.lora == nil {
		return fmt.Errorf("torch: UnloadAdapter: %w: no adapters are attached", learner.ErrInvalidConfig)
	}
	if err := m.wk.call("unload_adapter", map[string]any{}, nil, nil); err != nil {
		return err
	}
	m.lora = nil
	return nil
}

// SaveAdapter implements engine.Model.
func (m *Model) SaveAdapter(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	return m.wk.call("save_adapter", map[string]any{"dir": abs}, nil, nil)
}

// Save implements engine.Model.
func (m *Model) Save(dir string, dtype safetensors.DType) error {
	names := map[safetensors.DType]string{"": "float32", safetensors.F32: "float32", safetensors.BF16: "bfloat16", safetensors.F16: "float16"}
	name, ok := names[dtype]
	if !ok {
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "dtype", Value: dtype, Reason: "want F32, BF16 or F16"}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := m.wk.call("save", map[string]any{"dir": abs, "dtype": name}, nil, nil); err != nil {
		return err
	}
	return hfmodel.CopyTokenizerFiles(m.srcDir, abs)
}

// OptimizerFile is the file name SaveOptimizer writes beside a Hugging Face directory's files.
const OptimizerFile = engine.OptimizerFile

// SaveOptimizer implements engine.OptimizerStater: it writes the AdamW state (each trainable
// parameter's moments as float32 "NAME.exp_avg"/"NAME.exp_avg_sq", the step counts in the
// metadata) to path atomically.
func (m *Model) SaveOptimizer(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return m.wk.call("save_optimizer", map[string]any{"path": abs}, nil, nil)
}

// LoadOptimizer implements engine.OptimizerStater: it restores a SaveOptimizer file into the
// optimizer of the current trainable parameters (after Reload, AddLoRA or LoadAdapter). A file that is not one, or whose tensors do
// not match the parameters, is a *RemoteError of kind bad_checkpoint and changes nothing.
func (m *Model) LoadOptimizer(path string) error {
	abs, err := filepath.Abs(path)
	if err != nil {
		return err
	}
	return m.wk.call("load_optimizer", map[string]any{"path": abs}, nil, nil)
}

// Reload implements engine.Model: the worker loads dir in place of its model (its optimizer
// state starts afresh; LoadOptimizer restores a saved one).
func (m *Model) Reload(dir string) error {
	if m.lora != nil {
		return fmt.Errorf("torch: Reload: %w: LoRA adapters are attached", learner.ErrInvalidConfig)
	}
	cfg, err := hfmodel.LoadConfig(dir)
	if err != nil {
		return err
	}
	if !m.cfg.SameArchitecture(cfg) {
		return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "config.json", Value: dir, Reason: "describes another architecture than the model's"}
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := m.wk.call("load", m.placement(map[string]any{"dir": abs}), nil, nil); err != nil {
		return err
	}
	m.cfg, m.srcDir = cfg, abs
	if m.pool != [2]int{} { // the worker dropped the pool with the old model
		return m.wk.call("decoder_open", map[string]any{"slots": m.pool[0], "slot_len": m.pool[1]}, nil, nil)
	}
	return nil
}

// Memory implements engine.Model: the worker's layout (chunked log-probs, activation
// checkpointing when the model was loaded with it).
func (m *Model) Memory(batch, seqLen int) hfmodel.MemoryEstimate {
	layout := engine.Spec{Kind: engine.Torch, ActivationCheckpointing: m.actCkpt}.TrainLayout()
	var lc hfmodel.LoRAConfig
	if m.lora != nil {
		lc = *m.lora
	}
	return hfmodel.EstimateTrainMemory(m.cfg, batch, seqLen, lc, layout)
}

// Stats is the worker's memory report.
type Stats struct {
	RSSBytes         int64 `msgpack:"rss_bytes"`
	PeakRSSBytes     int64 `msgpack:"peak_rss_bytes"`
	CUDAAllocated    int64 `msgpack:"cuda_allocated"`
	CUDAMaxAllocated int64 `msgpack:"cuda_max_allocated"`
	Steps            int64 `msgpack:"steps"`
	// ActivationCheckpointing and LogProbChunk are the model's memory options as the worker
	// holds them (the trained positions whose logits one chunk computes; 0: all at once).
	ActivationCheckpointing bool `msgpack:"activation_checkpointing"`
	LogProbChunk            int  `msgpack:"logprob_chunk"`
}

// Stats asks the worker for its memory use.
func (m *Model) Stats() (Stats, error) {
	var st Stats
	err := m.wk.call("stats", map[string]any{}, &st, nil)
	return st, err
}

// ResetPeak resets the worker's CUDA peak-memory statistics.
func (m *Model) ResetPeak() error { return m.wk.call("reset_peak", map[string]any{}, nil, nil) }

// Close implements engine.Model: it stops the worker.
func (m *Model) Close() error { return m.wk.Close() }

var (
	_ engine.Model           = (*Model)(nil)
	_ engine.AdapterUnloader = (*Model)(nil)
	_ engine.OptimizerStater = (*Model)(nil)
)
