package agent

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/gtc-dev/gtc/agenttools"
)

// Listing formats.
const (
	FormatAnthropic = "anthropic"
	FormatOpenAI    = "openai"
	FormatMCP       = "mcp"
)

// Formats lists the listing formats; the first is the default.
var Formats = []string{FormatAnthropic, FormatOpenAI, FormatMCP}

// ErrUnknownFormat is the error of Listing for a format not in Formats.
var ErrUnknownFormat = errors.New("unknown listing format")

// Listing is the body of GET /v1/agent/tools.
type Listing struct {
	Format         string `json:"format"`
	ToolsetVersion string `json:"toolsetVersion"`
	Instructions   string `json:"instructions"`
	// Tools holds one element per tool in the fixed order, shaped for the format:
	// AnthropicTool, OpenAITool or *mcp.Tool.
	Tools []any `json:"tools"`
}

// AnthropicTool is a tool in the form of the Anthropic Messages API.
type AnthropicTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// OpenAITool is a tool in the form of OpenAI Chat Completions. strict is not set: it wants
// every property required.
type OpenAITool struct {
	Type     string         `json:"type"`
	Function OpenAIFunction `json:"function"`
}

// OpenAIFunction is the function of an OpenAITool.
type OpenAIFunction struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
}

// Listing returns the tool definitions in format ("" is anthropic). The mcp elements are
// the very values the MCP server lists.
func (t *Tools) Listing(format string) (*Listing, error) {
	if format == "" {
		format = FormatAnthropic
	}
	l := &Listing{Format: format, ToolsetVersion: t.version, Instructions: agenttools.Instructions, Tools: make([]any, 0, len(t.defs))}
	for _, tl := range t.defs {
		switch format {
		case FormatAnthropic:
			l.Tools = append(l.Tools, AnthropicTool{Name: tl.Name, Description: tl.Description, InputSchema: json.RawMessage(tl.Schema)})
		case FormatOpenAI:
			l.Tools = append(l.Tools, OpenAITool{Type: "function",
				Function: OpenAIFunction{Name: tl.Name, Description: tl.Description, Parameters: json.RawMessage(tl.Schema)}})
		case FormatMCP:
			l.Tools = append(l.Tools, tl.mcp)
		default:
			return nil, fmt.Errorf("%w %q", ErrUnknownFormat, format)
		}
	}
	return l, nil
}

// annotations are the MCP hints of a tool: read-only for the readers, destructive for the
// two writers.
func annotations(d agenttools.Definition) *mcp.ToolAnnotations {
	if d.Writes {
		yes := true
		return &mcp.ToolAnnotations{DestructiveHint: &yes}
	}
	return &mcp.ToolAnnotations{ReadOnlyHint: true}
}
