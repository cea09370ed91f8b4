package engine

import (
	"fmt"

	"github.com/t2t-lab/t2t/learner"
)

// Sample is one sampled completion for a GRPO step.
type Sample struct {
	Prompt     []int32   // prompt token ids (≥ 1)
	Completion []int32   // generated token ids (≥ 1)
	LogProbs   []float32 // behaviour log-prob of each completion token (as Generate returns at temperature 1)
	// RefLogProbs are optional reference-model log-probs of the completion tokens (KL penalty);
	// give them for all samples of a batch or for none.
	RefLogProbs []float32
	Advantage   float32 // the completion's group advantage (learner.GroupAdvantages)
}

// NewSeqBatch lays samples out for learner.Trainer (inputs: token ids and validity mask):
// row i holds Prompt ++ Completion without its last token, Actions are the next tokens, and
// only positions that predict completion tokens are trained (Mask = 1) with the behaviour
// log-probs and the sample's advantage. Rows are left-padded to the longest one (padding has
// validity 0 and mask 0), so every completion ends at the row's end and the batch's Tail is the
// longest completion: the trainer computes the output layer on that window only. For behaviour
// cloning (BCStep) LogProbs may be nil.
func NewSeqBatch(samples []Sample) (*learner.SeqBatch, error) {
	if len(samples) == 0 {
		return nil, fmt.Errorf("%w: no samples", learner.ErrBadBatch)
	}
	withRef := samples[0].RefLogProbs != nil
	withLP := samples[0].LogProbs != nil
	t, tail := 0, 0
	for i, s := range samples {
		if len(s.Prompt) == 0 || len(s.Completion) == 0 {
			return nil, fmt.Errorf("%w: sample %d: need a prompt and a completion", learner.ErrBadBatch, i)
		}
		if (s.LogProbs != nil) != withLP || (s.LogProbs != nil && len(s.LogProbs) != len(s.Completion)) {
			return nil, fmt.Errorf("%w: sample %d: %d log-probs for %d completion tokens", learner.ErrBadBatch, i, len(s.LogProbs), len(s.Completion))
		}
		if (s.RefLogProbs != nil) != withRef || (withRef && len(s.RefLogProbs) != len(s.Completion)) {
			return nil, fmt.Errorf("%w: sample %d: reference log-probs must be given for every completion token of every sample or none", learner.ErrBadBatch, i)
		}
		t = max(t, len(s.Prompt)+len(s.Completion)-1)
		tail = max(tail, len(s.Completion))
	}
	n := len(samples) * t
	b := &learner.SeqBatch{
		Rows: len(samples), T: t, Tail: tail,
		Inputs:     []learner.ModelInput{{I32: make([]int32, n)}, {I32: make([]int32, n)}},
		Actions:    make([]int32, n),
		Mask:       make([]float32, n),
		Advantages: make([]float32, len(samples)),
	}
	if withLP {
		b.BehaviourLogProbs = make([]float32, n)
	}
	if withRef {
		b.RefLogProbs = make([]float32, n)
	}
	for i, s := range samples {
		seq := append(append(make([]int32, 0, len(s.Prompt)+len(s.Completion)), s.Prompt...), s.Completion...)
		row := i*t + t - (len(seq) - 1) // left padding: the row's last position predicts the last token
		for j := range len(seq) - 1 {
			b.Inputs[0].I32[row+j] = seq[j]
			b.Inputs[1].I32[row+j] = 1
			b.Actions[row+j] = seq[j+1]
		}
		for k := range s.Completion {
			j := row + len(s.Prompt) - 1 + k
			b.Mask[j] = 1
			if withLP {
				b.BehaviourLogProbs[j] = s.LogProbs[k]
			}
			if withRef {
				b.RefLogProbs[j] = s.RefLogProbs[k]
			}
		}
		b.Advantages[i] = s.Advantage
	}
	return b, nil
}
