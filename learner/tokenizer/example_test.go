package tokenizer_test

import (
	"fmt"

	"github.com/t2t-lab/t2t/learner/tokenizer"
)

func ExampleChatPrompt() {
	p := tokenizer.ChatPrompt([]tokenizer.Message{
		{Role: tokenizer.RoleSystem, Content: "You plan paths."},
		{Role: tokenizer.RoleUser, Content: "Solve it."},
	}, true, false)
	fmt.Printf("%q\n", p)
	// Output:
	// "<|im_start|>system\nYou plan paths.<|im_end|>\n<|im_start|>user\nSolve it.<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n"
}
