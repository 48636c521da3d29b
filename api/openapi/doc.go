// Package openapi builds the OpenAPI 3.1 document of the GTC HTTP API: the
// body of GET {prefix}/openapi.json, the component schemas behind GET {prefix}/schemas, and the
// list of documented routes that the router is checked against.
package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	jsonv2 "github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"
	jsonv1 "github.com/go-json-experiment/json/v1"
)

// Doc is a built OpenAPI document as plain JSON values (map[string]any, []any, string, float64,
// bool, nil). It is immutable: accessors return copies.
type Doc struct {
	root map[string]any
	json []byte
}

// Document builds the document for an API served under prefix (such as "/v1"; the probes
// /healthz and /readyz stay outside it) and the product version string.
func Document(prefix, version string) *Doc {
	schemas := schema{}
	for name, s := range componentSchemas() {
		schemas[name] = s.set("title", name)
	}
	for name, s := range exportSchemas() {
		schemas[name] = s.set("title", name)
	}
	for name, s := range releaseSchemas() {
		schemas[name] = s.set("title", name)
	}
	for name, s := range agentSchemas() {
		schemas[name] = s.set("title", name)
	}
	pathItems := schema{}
	for path, item := range paths(prefix) {
		pathItems[path] = item
	}
	for path, item := range exportPaths(prefix) {
		pathItems[path] = item
	}
	for path, item := range releasePaths(prefix) {
		pathItems[path] = item
	}
	for path, item := range agentPaths(prefix) {
		pathItems[path] = item
	}
	root := schema{
		"openapi": "3.1.0",
		"info": schema{
			"title":   "Ground Truth Curator",
			"version": version,
			"description": "HTTP API of the Ground Truth Curator backend. Every error answer " +
				"(status ≥ 400) has the body ErrorResponse; 422 answers have HTTPValidationError, and the " +
				"409 of an assign has AssignmentConflictError, an ErrorResponse with two more keys.",
		},
		"security": []schema{{"easyAuth": []string{}}, {"devUser": []string{}}},
		"tags": []schema{
			{"name": "health", "description": "Probes, outside the prefix; anonymous in every auth mode."},
			{"name": "meta", "description": "This document, its component schemas and the frontend settings."},
			{"name": "ground-truths", "description": "The ground-truth items."},
			{"name": "jobs", "description": "Background jobs, kept in the server's memory."},
			{"name": "assignments", "description": "The caller's queue: self-serve, assign, assignee edit, rephrase copies."},
			{"name": "tags", "description": "The tag vocabulary, the tag schema and the glossary."},
			{"name": "datasets", "description": "Datasets and their curation instructions."},
			{"name": "search", "description": "Reference search."},
			{"name": "exports", "description": "Exports of items as downloads, streams or snapshots in export storage, and the stored snapshots."},
			{"name": "releases", "description": "Named, immutable releases of items pinned at their revisions, with splits and a dataset card."},
			{"name": "agent", "description": "The LLM tool endpoint: tool definitions and invocation (the MCP server on /mcp is not part of this document)."},
		},
		"paths": pathItems,
		"components": schema{
			"schemas": schemas,
			"securitySchemes": schema{
				"easyAuth": schema{
					"type": "apiKey", "in": "header", "name": "X-MS-CLIENT-PRINCIPAL",
					"description": "Easy Auth mode: the principal that Azure Container Apps / App Service " +
						"authentication puts in front of the app (base64 JSON).",
				},
				"devUser": schema{
					"type": "apiKey", "in": "header", "name": "X-User-Id",
					"description": "Dev mode: the caller's user id (optional; ignored in Easy Auth mode).",
				},
			},
		},
	}

	raw, err := marshal(root)
	if err != nil {
		panic(fmt.Sprintf("openapi: marshal document: %v", err))
	}
	var plain map[string]any
	if err := json.Unmarshal(raw, &plain); err != nil {
		panic(fmt.Sprintf("openapi: reread document: %v", err))
	}
	return &Doc{root: plain, json: raw}
}

// marshal encodes compactly with the semantics of encoding/json (map keys sorted) and the
// escaping of jsontext: <, >, &, U+2028 and U+2029 are left as they are.
func marshal(v any) ([]byte, error) {
	return jsonv2.Marshal(v, jsonv1.DefaultOptionsV1(), jsontext.EscapeForHTML(false), jsontext.EscapeForJS(false))
}

// JSON returns the document as compact JSON without HTML escaping.
func (d *Doc) JSON() []byte { return bytes.Clone(d.json) }

// Paths returns every documented path (prefix applied, parameters written {name}) with its
// methods, upper-case and sorted.
func (d *Doc) Paths() map[string][]string {
	out := map[string][]string{}
	for path, item := range d.root["paths"].(map[string]any) {
		var methods []string
		for key := range item.(map[string]any) {
			if httpMethods[key] {
				methods = append(methods, strings.ToUpper(key))
			}
		}
		slices.Sort(methods)
		out[path] = methods
	}
	return out
}

var httpMethods = map[string]bool{
	"get": true, "put": true, "post": true, "delete": true, "options": true, "head": true,
	"patch": true, "trace": true,
}

// Schema returns a copy of the named component schema.
func (d *Doc) Schema(name string) (map[string]any, bool) {
	s, ok := d.schemas()[name].(map[string]any)
	if !ok {
		return nil, false
	}
	return deepCopy(s).(map[string]any), true
}

// SchemaNames returns the names of every component schema, sorted.
func (d *Doc) SchemaNames() []string {
	return slices.Sorted(maps.Keys(d.schemas()))
}

func (d *Doc) schemas() map[string]any {
	return d.root["components"].(map[string]any)["schemas"].(map[string]any)
}

func deepCopy(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopy(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopy(e)
		}
		return out
	default:
		return v
	}
}

func sortedKeys(m schema) []string { return slices.Sorted(maps.Keys(m)) }
