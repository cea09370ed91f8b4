package textpolicy

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync/atomic"

	"github.com/t2t-lab/t2t/engineer"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner/engine"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// DefaultEngineerMaxTokens caps an in-process engineer's answer when the strategy sets no cap.
const DefaultEngineerMaxTokens = 1024

// EngineerChat answers the environment engineer's prompt with a model in this process
// (engineer.ChatModel): the policy being trained ("self", the paper's engineer: the current
// checkpoint, the same model object and engine between stages) or a frozen copy of the
// starting checkpoint ("base", the paper's comparison). Its generations wait while a training
// step runs (LM's lock), so a proposal always reads one version of the weights.
type EngineerChat struct {
	LM *LM
	// Label names the engineer in the audit, e.g. func() string { return "self@v" + version }.
	Label func() string
	// Thinking renders the chat template with thinking on.
	Thinking bool
	// Seed seeds sampling at temperature > 0; each call draws from its own stream.
	Seed uint64

	calls atomic.Uint64
}

// Chat implements engineer.ChatModel.
func (c *EngineerChat) Chat(ctx context.Context, msgs []engineer.ChatMessage, temperature float64, maxTokens int) (engineer.ChatAnswer, error) {
	ans := engineer.ChatAnswer{Engineer: c.Label()}
	if err := ctx.Err(); err != nil {
		return ans, err
	}
	prompt := EngineerPrompt(c.LM, msgs, c.Thinking)
	if maxTokens <= 0 {
		maxTokens = DefaultEngineerMaxTokens
	}
	if room := c.LM.MaxContext() - len(prompt); room < 1 {
		return ans, fmt.Errorf("textpolicy: engineer prompt of %d tokens fills the model's %d-token context", len(prompt), c.LM.MaxContext())
	} else if maxTokens > room {
		maxTokens = room
	}
	sc := engine.SampleConfig{MaxNewTokens: maxTokens, Temperature: temperature, StopTokens: c.LM.Stop}
	var rng *rand.Rand
	if temperature > 0 {
		rng = rand.New(rand.NewPCG(c.Seed, 0xe6e1+c.calls.Add(1)))
	}
	gen, err := c.LM.Generate([][]int32{prompt}, sc, rng)
	if err != nil {
		return ans, fmt.Errorf("textpolicy: engineer: %w", err)
	}
	ans.Content = c.LM.CompletionText(gen.Tokens[0])
	ans.Tokens = len(prompt) + len(gen.Tokens[0])
	return ans, nil
}

var _ engineer.ChatModel = (*EngineerChat)(nil)

// EngineerPrompt is the token ids EngineerChat gives lm for msgs: the chat template with the
// generation prompt (thinking on or off).
func EngineerPrompt(lm *LM, msgs []engineer.ChatMessage, thinking bool) []int32 {
	return lm.Tok.Encode(chatText(msgs, thinking))
}

// chatText is msgs in the chat template with the generation prompt (thinking on or off).
func chatText(msgs []engineer.ChatMessage, thinking bool) string {
	turns := make([]tokenizer.Message, len(msgs))
	for i, m := range msgs {
		turns[i] = tokenizer.Message{Role: m.Role, Content: m.Content}
	}
	return tokenizer.ChatPrompt(turns, true, thinking)
}

// EngineerSample is an engineer turn as supervised data for lm: the prompt EngineerChat would
// send for the turn's system and user messages, and the teacher's answer (after an empty think
// block when thinking, as Target does for env answers) ended by the stop token.
func EngineerSample(lm *LM, t *engineer.Turn, thinking bool) engine.Sample {
	text := t.Answer
	if thinking {
		text = tokenizer.ThinkOpen + "\n\n" + tokenizer.ThinkClose + "\n\n" + text
	}
	return engine.Sample{Prompt: EngineerPrompt(lm, turnMessages(t), thinking), Completion: append(lm.Tok.Encode(text), lm.Stop[0])}
}

// EngineerTexts are the texts of turns as EngineerSample teaches them (thinking off): each
// turn's chat prompt, and its answer with the end-of-turn marker. They are a tokenizer corpus
// (TinyTokenizerJSON's extra texts), so that a tiny model's engineer turns take few tokens.
func EngineerTexts(turns []engineer.Turn) []string {
	out := make([]string, 0, 2*len(turns))
	for i := range turns {
		out = append(out, chatText(turnMessages(&turns[i]), false), turns[i].Answer+tokenizer.ImEnd+"\n")
	}
	return out
}

// TrainingTurnTexts reads a turns file (t2t engineer turns --out) and returns the EngineerTexts
// of its training turns and how many there are: the held-out ones (engineer.ReadTrainingTurns at
// the default share) are never read. A file with no training turn is a *fielderr.Error naming it.
func TrainingTurnTexts(path string) ([]string, int, error) {
	turns, err := engineer.ReadTrainingTurns(path, engineer.DefaultHeldOutPercent, -1)
	if err != nil {
		return nil, 0, err
	}
	if len(turns) == 0 {
		return nil, 0, &fielderr.Error{File: path, Reason: "no training turn (every turn is held out)"}
	}
	return EngineerTexts(turns), len(turns), nil
}

// turnMessages are the system and user messages of t's prompt.
func turnMessages(t *engineer.Turn) []engineer.ChatMessage {
	return []engineer.ChatMessage{{Role: tokenizer.RoleSystem, Content: t.System}, {Role: tokenizer.RoleUser, Content: t.User}}
}
