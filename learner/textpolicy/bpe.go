package textpolicy

import (
	"fmt"
	"strconv"

	"github.com/t2t-lab/t2t/env"
	"github.com/t2t-lab/t2t/internal/fielderr"
	"github.com/t2t-lab/t2t/learner/tokenizer"
)

// Tiny tokenizer defaults (see TinyTokenizerJSON).
const (
	// DefaultTinyVocab is the vocabulary size of the tokenizer that `t2t model init` writes
	// when no tokenizer is given, and so of the tiny preset's checkpoints and of `t2t bench
	// --preset tiny`: 256 bytes, 967 merges and 5 added tokens. It is all the corpus yields:
	// merges stop there, when every word that occurs twice in the corpus is one token, so
	// TinyTokenizerJSON of a larger vocab is the same tokenizer (TestTinyVocabIsAllTheCorpusYields).
	DefaultTinyVocab = 1228
	// tinyCorpusSeed seeds the instances whose prompts and answers make the training corpus.
	tinyCorpusSeed = 0x7e57
)

// TinyAddedTokens are the added tokens of the tiny tokenizer, in id order after the byte-level
// vocabulary and the merges: Qwen3's chat markers and think tags (the first three special).
var TinyAddedTokens = []string{tokenizer.EndOfText, tokenizer.ImStart, tokenizer.ImEnd, tokenizer.ThinkOpen, tokenizer.ThinkClose}

// tinySpecialTokens is how many of TinyAddedTokens, from the first, are special (the chat
// markers; the think tags are not).
const tinySpecialTokens = 3

// TinySplitPattern is the regex of the tiny tokenizer's Split pre-tokenizer (behaviour
// Isolated): each match is a word of its own, and so is each stretch of text between matches.
// The matches are what a model must reason about, one token each (see TinyTokenizerJSON):
//
//   - a move word, with its leading space if any: UP, DOWN, LEFT, RIGHT, WAIT (" UP", "UP", …),
//     not followed by a letter;
//   - a single digit, so coordinates, sizes and agent numbers are spelled digit by digit;
//   - a map cell that is ice or a hole (".", "H") with the spaces before it, when a space, a
//     newline or the end follows it ("   H" in a map row, never the "." ending a sentence).
//
// It uses only constructs that Oniguruma (Hugging Face tokenizers) and regexp2 read alike.
const TinySplitPattern = ` ?(?:UP|DOWN|LEFT|RIGHT|WAIT)(?![A-Za-z])|[0-9]| +[.H](?![^ \n])`

// TinyTokenizerJSON returns a small byte-level BPE tokenizer.json for the tiny random
// checkpoints that tests and `t2t model init` build when no real tokenizer is at hand. It is
// learned, deterministically, from the testbed's own texts (TinyCorpus), so that prompts are
// short and a tiny model's context stays small:
//
//   - ids 0..255 are the 256 bytes in GPT-2's byte-level alphabet;
//   - then up to vocab−261 merges learned by byte-pair encoding (tokenizer.TrainBPE) on the
//     corpus words (the most frequent adjacent pair first; ties go to the pair whose merged
//     bytes sort first); merges stop early when no pair occurs twice;
//   - then the added tokens TinyAddedTokens (<|endoftext|>, <|im_start|>, <|im_end|>, <think>,
//     </think>).
//
// The pre-tokenizer is a Sequence of a Split on TinySplitPattern (Isolated) and ByteLevel with
// use_regex false, the shape of Qwen3's. Between the pattern's matches there is no further
// split, so merges span words: the fixed text of the prompt (the rules, the answer format)
// becomes a few tokens per line. But no merge crosses a match, so every move word and every
// digit stays a token of its own that a model can read and write one at a time — a tokenizer
// that merges whole answer lines ("Agent 0: UP RIGHT\n") leaves a model to classify opaque
// plans. Training also never merges across a newline, so encoding text equals encoding its
// lines one by one. vocab must be 0 or in [261+1, 1<<20].
//
// extra texts join the corpus: EngineerTexts of the engineer turns a model will be taught, say,
// whose fixed prompt text and JSON keys then become a few tokens each (an engineer turn of
// configs/engineer-histories.jsonl takes about a third of the tokens). vocab 0 means all the
// corpus yields (DefaultTinyVocab without extra texts).
func TinyTokenizerJSON(vocab int, extra ...string) ([]byte, error) {
	corpus, err := TinyCorpus()
	if err != nil {
		return nil, err
	}
	if vocab == 0 {
		vocab = tokenizer.MaxTrainVocab
	}
	return TrainBPEJSON(append(corpus, extra...), vocab)
}

// TinyCorpus returns the texts TinyTokenizerJSON learns from: each move word alone, and for 64
// training instances (2 agents, sizes 3..10) and a small 3/4/5-agent suite, the
// chat-formatted prompt in the text and JSON answer forms, and the optimal plan in the
// canonical answer form. It depends on
// nothing but the env package's generator and renderers.
func TinyCorpus() ([]string, error) {
	ins, err := tinyCorpusInstances()
	if err != nil {
		return nil, err
	}
	// Every move word, bare and after a space, twice: each becomes one token even where the
	// prompts hold only one of the two forms.
	var out []string
	for _, m := range []env.Move{env.Up, env.Down, env.Left, env.Right, env.Wait} {
		for range 2 {
			out = append(out, m.String()+"\n", " "+m.String()+"\n")
		}
	}
	for i, in := range ins {
		opt := env.DefaultPromptOptions()
		if i%4 == 3 {
			opt.Format = env.AnswerJSON
		}
		out = append(out, ChatText(env.RenderPrompt(in, opt), false))
		sol, err := env.Solve(in, env.SolveOptions{})
		if err != nil {
			continue
		}
		moves, err := env.PlanMoves(&sol.Plan)
		if err != nil {
			return nil, err
		}
		out = append(out, env.FormatMoves(moves)+tokenizer.ImEnd+"\n")
	}
	return out, nil
}

// StyleCorpus returns, for the instances of TinyCorpus, the chat-formatted prompt of opt and
// the canonical optimal answer in opt's answer format (AnswerText): texts for a tokenizer that a
// model of that prompt style will read and write (`t2t model init --tokenizer-prompt`).
func StyleCorpus(opt env.PromptOptions) ([]string, error) {
	ins, err := tinyCorpusInstances()
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, 2*len(ins))
	for _, in := range ins {
		out = append(out, ChatText(env.RenderPrompt(in, opt), false))
		sol, err := env.Solve(in, env.SolveOptions{})
		if err != nil {
			continue
		}
		plan, err := env.CanonicalPlan(in, &sol.Plan)
		if err != nil {
			return nil, err
		}
		text, err := AnswerText(plan, opt.Format)
		if err != nil {
			return nil, err
		}
		out = append(out, text+tokenizer.ImEnd+"\n")
	}
	return out, nil
}

// TokenizerExtras returns the texts that join a learned tokenizer's corpus (TinyTokenizerJSON's
// extra) for `t2t model init`: the prompts and answers of prompt style (StyleCorpus; none for
// "") and the training turns of turnsFile (TrainingTurnTexts, their number in turns; none for
// ""). A style env.PromptStyle does not know is a *fielderr.Error of flag tokenizer-prompt.
func TokenizerExtras(style, turnsFile string) (texts []string, turns int, err error) {
	if style != "" {
		opt, err := env.PromptStyle(style)
		if err != nil {
			return nil, 0, &fielderr.Error{Flag: "tokenizer-prompt", Value: strconv.Quote(style), Reason: env.PromptStyleWant}
		}
		if texts, err = StyleCorpus(opt); err != nil {
			return nil, 0, err
		}
	}
	if turnsFile != "" {
		more, n, err := TrainingTurnTexts(turnsFile)
		if err != nil {
			return nil, 0, err
		}
		texts, turns = append(texts, more...), n
	}
	return texts, turns, nil
}

// tinyCorpusInstances returns the instances of TinyCorpus: 64 training instances (2 agents,
// sizes 3..10) and a small 3/4/5-agent suite.
func tinyCorpusInstances() ([]*env.Instance, error) {
	cfg := env.DefaultConfig()
	cfg.Instances = 64
	ins, err := env.Generate(cfg, tinyCorpusSeed, 0, cfg.Instances)
	if err != nil {
		return nil, fmt.Errorf("textpolicy: tiny corpus: %w", err)
	}
	spec := env.QuickSpec(tinyCorpusSeed, 1)
	more, err := env.GenerateSuite(&spec, 0, spec.Len())
	if err != nil {
		return nil, fmt.Errorf("textpolicy: tiny corpus: %w", err)
	}
	return append(ins, more...), nil
}

// ChatText renders one user turn with Qwen3's chat template and the generation prompt
// (thinking on or off).
func ChatText(user string, thinking bool) string {
	return tokenizer.ChatPrompt([]tokenizer.Message{{Role: tokenizer.RoleUser, Content: user}}, true, thinking)
}

// TrainBPEJSON learns a byte-level BPE of vocab ids (256 bytes, merges, TinyAddedTokens) from
// texts with the tiny tokenizer's pre-tokenizer (TinySplitPattern) and returns it as a Hugging
// Face tokenizer.json: tokenizer.TrainBPE with the tiny tokenizer's options (see
// TinyTokenizerJSON). Errors wrap tokenizer.ErrTrain.
func TrainBPEJSON(texts []string, vocab int) ([]byte, error) {
	added := make([]tokenizer.AddedToken, len(TinyAddedTokens))
	for i, a := range TinyAddedTokens {
		added[i] = tokenizer.AddedToken{Content: a, Special: i < tinySpecialTokens}
	}
	return tokenizer.TrainBPE(texts, tokenizer.BPETrainOptions{Vocab: vocab, AddedTokens: added, SplitPattern: TinySplitPattern})
}
