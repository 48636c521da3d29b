package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
	l := &Listing{Format: format, ToolsetVersion: t.version, Instructions: Instructions, Tools: make([]any, 0, len(t.defs))}
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

// annotations are the MCP hints of a tool: read-only for the five readers, destructive for
// the two writers.
func (d definition) annotations() *mcp.ToolAnnotations {
	if d.Writes {
		yes := true
		return &mcp.ToolAnnotations{DestructiveHint: &yes}
	}
	return &mcp.ToolAnnotations{ReadOnlyHint: true}
}

// toolsetVersion is the first 12 hex digits of the SHA-256 of the canonical definitions: the
// seven tools in order, each with name, title, description, schema and annotations, as JSON
// with sorted keys and no insignificant whitespace. Any change to a definition changes it.
func toolsetVersion() (string, error) {
	canon := make([]map[string]any, 0, len(definitions))
	for _, d := range definitions {
		var schema any
		if err := json.Unmarshal([]byte(d.Schema), &schema); err != nil {
			return "", fmt.Errorf("agent: schema of %s: %w", d.Name, err)
		}
		ann := map[string]any{"readOnlyHint": true}
		if d.Writes {
			ann = map[string]any{"destructiveHint": true}
		}
		canon = append(canon, map[string]any{"name": d.Name, "title": d.Title, "description": d.Description,
			"inputSchema": schema, "annotations": ann})
	}
	b, err := json.Marshal(canon)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])[:12], nil
}
