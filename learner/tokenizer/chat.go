package tokenizer

import "strings"

// Chat roles understood by ChatPrompt.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Qwen chat-format markers.
const (
	ImStart    = "<|im_start|>"
	ImEnd      = "<|im_end|>"
	EndOfText  = "<|endoftext|>"
	ThinkOpen  = "<think>"
	ThinkClose = "</think>"
)

// Message is one chat turn.
type Message struct {
	Role    string // RoleSystem, RoleUser, RoleAssistant or RoleTool; other roles are not rendered
	Content string
	// Reasoning is an assistant turn's reasoning_content. Empty means "not given": the
	// reasoning is then taken from a <think>…</think> block in Content, as the template does.
	Reasoning string
}

// ChatPrompt renders msgs with Qwen3's chat template (the Jinja template shipped in Qwen3's
// tokenizer_config.json, without tool definitions and tool calls), reproduced in Go:
//
//   - If the first message is a system message: "<|im_start|>system\n" + content + "<|im_end|>\n".
//   - A user message, or a system message that is not the first:
//     "<|im_start|>" + role + "\n" + content + "<|im_end|>\n".
//   - An assistant message: its reasoning is Reasoning if given, else, when Content contains
//     "</think>", the text between the last "<think>" before the first "</think>" and that
//     "</think>" (with newlines trimmed at its ends), and the content is then what follows the
//     last "</think>" with leading newlines removed. If the message comes after the last real
//     user query (a user message that is not a "<tool_response>…</tool_response>" wrapper) and
//     is either the last message or has non-empty reasoning, it is rendered
//     "<|im_start|>assistant\n<think>\n" + reasoning (newlines trimmed at both ends) +
//     "\n</think>\n\n" + content (leading newlines removed); otherwise
//     "<|im_start|>assistant\n" + content: the reasoning of earlier turns is dropped. Then
//     "<|im_end|>\n".
//   - Consecutive tool messages form one user turn: "<|im_start|>user" before the first, then
//     "\n<tool_response>\n" + content + "\n</tool_response>" each, "<|im_end|>\n" after the last.
//   - addGenerationPrompt appends "<|im_start|>assistant\n", and with enableThinking false also
//     "<think>\n\n</think>\n\n" (an empty thought: the model answers directly).
//
// Encode the result with Encode: the markers are added tokens and encode as single ids.
func ChatPrompt(msgs []Message, addGenerationPrompt, enableThinking bool) string {
	var sb strings.Builder
	if len(msgs) > 0 && msgs[0].Role == RoleSystem {
		sb.WriteString(ImStart + "system\n" + msgs[0].Content + ImEnd + "\n")
	}
	lastQuery := len(msgs) - 1
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role == RoleUser && !(strings.HasPrefix(m.Content, "<tool_response>") && strings.HasSuffix(m.Content, "</tool_response>")) {
			lastQuery = i
			break
		}
	}
	for i, m := range msgs {
		switch {
		case m.Role == RoleUser || (m.Role == RoleSystem && i > 0):
			sb.WriteString(ImStart + m.Role + "\n" + m.Content + ImEnd + "\n")
		case m.Role == RoleAssistant:
			content, reasoning := m.Content, m.Reasoning
			if reasoning == "" && strings.Contains(content, ThinkClose) {
				parts := strings.Split(content, ThinkClose)
				content = strings.TrimLeft(parts[len(parts)-1], "\n")
				r := strings.TrimRight(parts[0], "\n")
				if k := strings.LastIndex(r, ThinkOpen); k >= 0 {
					r = r[k+len(ThinkOpen):]
				}
				reasoning = strings.TrimLeft(r, "\n")
			}
			if i > lastQuery && (i == len(msgs)-1 || reasoning != "") {
				sb.WriteString(ImStart + m.Role + "\n" + ThinkOpen + "\n" + strings.Trim(reasoning, "\n") +
					"\n" + ThinkClose + "\n\n" + strings.TrimLeft(content, "\n"))
			} else {
				sb.WriteString(ImStart + m.Role + "\n" + content)
			}
			sb.WriteString(ImEnd + "\n")
		case m.Role == RoleTool:
			if i == 0 || msgs[i-1].Role != RoleTool {
				sb.WriteString(ImStart + "user")
			}
			sb.WriteString("\n<tool_response>\n" + m.Content + "\n</tool_response>")
			if i == len(msgs)-1 || msgs[i+1].Role != RoleTool {
				sb.WriteString(ImEnd + "\n")
			}
		}
	}
	if addGenerationPrompt {
		sb.WriteString(ImStart + "assistant\n")
		if !enableThinking {
			sb.WriteString(ThinkOpen + "\n\n" + ThinkClose + "\n\n")
		}
	}
	return sb.String()
}
