package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner"
	"github.com/t2t-lab/t2t/learner/hfmodel"
	"github.com/t2t-lab/t2t/learner/safetensors"
)

// Engine names accepted by Spec.Kind and the commands' --engine flag.
const (
	GoMLX = "gomlx" // the pure-Go default (learner/qwen3 on a GoMLX backend)
	Torch = "torch" // a supervised PyTorch worker process (learner/torch)
)

// Names lists the engines, default first.
var Names = []string{GoMLX, Torch}

// ErrUnknownEngine: Spec.Kind names no engine.
var ErrUnknownEngine = errors.New("engine: unknown engine")

// StepKind selects the loss of an optimizer step.
type StepKind int

const (
	// StepGRPO is the clipped GRPO loss (learner.GRPOLoss) on a batch with behaviour log-probs
	// and advantages.
	StepGRPO StepKind = iota
	// StepBC is behaviour cloning (supervised fine-tuning): the mean cross-entropy of Actions
	// where Mask is 1.
	StepBC
)

func (k StepKind) String() string {
	if k == StepBC {
		return "bc"
	}
	return "grpo"
}

// Model is a Qwen3 causal language model on one compute engine: the seam every LLM path of t2t
// (the text policy, SFT, serving, benchmarks, parity checks) goes through. Both engines give
// the same numbers for the same weights (float32; tested in CI): logits, log-probs, GRPO and
// SFT steps, checkpoints, greedy ids. Sampled ids at temperature > 0 come from each engine's
// own random stream.
//
// Methods serialise on the model: a generation, a step and a save never run at once on the
// same Model. Close releases it (the torch engine stops its worker).
type Model interface {
	// Engine is GoMLX or Torch.
	Engine() string
	// Device describes where the math runs (e.g. "cpu (pure Go)", "cuda:0 (torch 2.11)").
	Device() string
	// Config is the model's architecture.
	Config() hfmodel.Config
	// GenerateStream samples continuations of prompts with a KV cache (qwen3.Model's semantics:
	// temperature, top-k, top-p, stop tokens, per-token log-probs under softmax(logits/T), an
	// onToken callback that may end a row by returning true). rng drives sampling when
	// Temperature > 0.
	GenerateStream(prompts [][]int32, sc SampleConfig, topLogProbs int, rng *rand.Rand, onToken func(TokenEvent) bool) (*Generation, error)
	// Logits returns each sequence's logits, len(seq)·VocabSize values (row t predicts token t+1).
	Logits(seqs [][]int32) ([][]float32, error)
	// LogProbs returns log π(Actions) at the positions of b (a qwen3.NewSeqBatch layout:
	// inputs token ids and validity); positions outside a Tail window may be 0.
	LogProbs(b *learner.SeqBatch) ([]float32, error)
	// SetTrainConfig sets the optimizer and loss settings of later steps (validated).
	SetTrainConfig(cfg learner.GRPOConfig) error
	// Step runs one optimizer step (micro-batches, global-norm clipping, AdamW) on b.
	Step(kind StepKind, b *learner.SeqBatch) (learner.UpdateStats, error)
	// AddLoRA attaches adapters and freezes the base weights (before the first Step).
	AddLoRA(cfg hfmodel.LoRAConfig, seed uint64) error
	// LoRA returns the adapter configuration, if adapters are attached.
	LoRA() (hfmodel.LoRAConfig, bool)
	// LoadAdapter attaches a PEFT adapter directory.
	LoadAdapter(dir string) error
	// SaveAdapter writes the adapters as a PEFT adapter directory.
	SaveAdapter(dir string) error
	// Save writes a Hugging Face directory (config.json, model.safetensors with LoRA merged in,
	// and the tokenizer files of the directory the model came from), each file atomically.
	Save(dir string, dtype safetensors.DType) error
	// Reload replaces the weights with those of a Hugging Face directory of the same
	// architecture (resuming a run); on error nothing changed. The optimizer's state is kept by
	// gomlx and reset by torch. Models with LoRA adapters refuse.
	Reload(dir string) error
	// Memory estimates a training micro-batch of batch sequences of seqLen tokens.
	Memory(batch, seqLen int) hfmodel.MemoryEstimate
	// Close releases the model.
	Close() error
}

// AdapterUnloader is a Model whose LoRA adapters can be detached again (UnloadAdapter: back to
// the base weights, ready for another LoadAdapter), so that one model serves several adapters
// in turn. The GoMLX engine implements it; the torch engine does not yet (its worker attaches
// adapters once).
type AdapterUnloader interface {
	UnloadAdapter() error
}

// Spec says which engine loads a model and how.
type Spec struct {
	// Kind is GoMLX (default when empty) or Torch.
	Kind string
	// Device: for GoMLX a learner.NewBackend device ("cpu", "xla:/abs/plugin.so"); for Torch
	// "cpu", "cuda" or "cuda:N" (default "cpu").
	Device string
	// Devices (torch engine) runs one worker per device, the ranks of one torch.distributed
	// group behind one Model (learner/torch.Group): "cpu" items are gloo ranks on the CPU,
	// "cuda:N" items NCCL ranks, one per GPU (CheckDevices). Empty: one worker on Device. With
	// Devices, Device must be "", the default "cpu", or the one device of a one-item list.
	Devices []string
	// Python is the torch engine's interpreter; empty: $T2T_PYTHON, then the first of python3,
	// /usr/bin/python3, python that imports torch.
	Python string
	// Autocast is the torch engine's mixed precision on CUDA: "" (float32) or "bf16" (bfloat16
	// autocast over float32 master weights).
	Autocast string
	// Threads is the torch engine's CPU threads (0: every core).
	Threads int
	// ActivationCheckpointing (torch engine only) keeps only each decoder layer's input during
	// a training step's forward pass and runs the layer again in the backward pass
	// (torch.utils.checkpoint): the layers' activations no longer grow the step's peak memory,
	// for about a third more compute. Loss and gradients are the same (≤ 1e-5).
	ActivationCheckpointing bool
	// Log receives the torch worker's stderr lines (nil: discarded).
	Log func(line string)
}

// TorchLogProbChunk is the torch worker's logprob_chunk (its train.DEFAULT_LOGPROB_CHUNK): the
// trained positions whose logits one chunk of a training step computes.
const TorchLogProbChunk = 1024

// TrainLayout is how the engine s names holds a training step's tensors (for
// hfmodel.EstimateTrainMemory): gomlx keeps every position's logits, every layer's activations,
// and a gradient accumulator beside each gradient; the torch worker accumulates gradients in
// place, computes log-probs in chunks of TorchLogProbChunk positions and, with
// ActivationCheckpointing, keeps only each layer's input.
func (s Spec) TrainLayout() hfmodel.TrainLayout {
	if s.kind() != Torch {
		return hfmodel.TrainLayout{}
	}
	return hfmodel.TrainLayout{LogProbChunk: TorchLogProbChunk, ActivationCheckpointing: s.ActivationCheckpointing, InPlaceGradients: true}
}

// Validate checks Kind (and the devices each engine accepts).
func (s Spec) Validate() error {
	if err := s.validateDevices(); err != nil {
		return err
	}
	switch s.kind() {
	case GoMLX:
		if s.Autocast != "" {
			return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "autocast", Value: s.Autocast, Reason: "only the torch engine has autocast"}
		}
		if s.ActivationCheckpointing {
			return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "activation-checkpointing", Value: true, Reason: "only the torch engine has activation checkpointing (--engine torch)"}
		}
	case Torch:
		d := s.Device
		if d != "" && d != "cpu" && d != "cuda" && !strings.HasPrefix(d, "cuda:") {
			return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "device", Value: d, Reason: `the torch engine runs on "cpu", "cuda" or "cuda:N"`}
		}
		if s.Autocast != "" && s.Autocast != "bf16" {
			return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "autocast", Value: s.Autocast, Reason: `want "" or "bf16"`}
		}
		if s.Threads < 0 {
			return &fielderr.Error{Kind: learner.ErrInvalidConfig, Field: "threads", Value: s.Threads, Reason: "must be ≥ 0"}
		}
	default:
		return fmt.Errorf("%w %q: want one of %s", ErrUnknownEngine, s.Kind, strings.Join(Names, ", "))
	}
	return nil
}

func (s Spec) kind() string {
	if s.Kind == "" {
		return GoMLX
	}
	return s.Kind
}
