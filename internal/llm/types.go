package llm

import (
	"errors"

	openai "github.com/sashabaranov/go-openai"
)

// The chat types of the OpenAI wire format, re-exported so that callers
// need not import go-openai.
type (
	// Message is one message of a conversation.
	Message = openai.ChatCompletionMessage
	// Tool is a function the model may call.
	Tool = openai.Tool
	// FunctionDefinition describes a Tool's function.
	FunctionDefinition = openai.FunctionDefinition
	// ToolCall is a call the model made.
	ToolCall = openai.ToolCall
	// FunctionCall is a ToolCall's function and its JSON arguments.
	FunctionCall = openai.FunctionCall
)

// Message roles.
const (
	RoleSystem    = openai.ChatMessageRoleSystem
	RoleUser      = openai.ChatMessageRoleUser
	RoleAssistant = openai.ChatMessageRoleAssistant
	RoleTool      = openai.ChatMessageRoleTool
)

// ToolTypeFunction is the type of every Tool and ToolCall.
const ToolTypeFunction = openai.ToolTypeFunction

// ErrReplyTooLong is wrapped when a streamed reply runs past what its
// max_tokens allows (MaxReplyBytes): a server that ignores the limit is cut
// off instead of being read until the request's time-out.
var ErrReplyTooLong = errors.New("the reply ran past its max_tokens")

// MaxReplyBytes is the most text (and tool-call arguments) a streamed
// reply of maxTokens tokens is read to: 16 bytes a token, four times the
// usual 4 characters a token.
func MaxReplyBytes(maxTokens int) int { return 16 * maxTokens }
