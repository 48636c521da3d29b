package openapi

import "strconv"

// schema is one JSON Schema (or any other OpenAPI object) under construction. The helpers below
// return fresh values, so a definition reads like the schema it builds; Document turns the
// finished tree into plain map[string]any values.
type schema map[string]any

func str() schema      { return schema{"type": "string"} }
func integer() schema  { return schema{"type": "integer"} }
func boolean() schema  { return schema{"type": "boolean"} }
func null() schema     { return schema{"type": "null"} }
func anyValue() schema { return schema{} }

// dateTime is an RFC 3339 date-time. Output always has UTC, `Z` and three fractional digits.
func dateTime() schema { return schema{"type": "string", "format": "date-time"} }

// freeObject is a JSON object stored verbatim, every key kept.
func freeObject() schema { return schema{"type": "object", "additionalProperties": true} }

// mapOf is an object whose keys are free and whose values all follow value.
func mapOf(value schema) schema { return schema{"type": "object", "additionalProperties": value} }

// obj is a closed object: unknown keys are rejected, as the server does everywhere except in
// free-form objects and the error body.
func obj(props schema, required ...string) schema {
	s := schema{"type": "object", "properties": props, "additionalProperties": false}
	if len(required) > 0 {
		s["required"] = required
	}
	return s
}

func arr(items schema) schema { return schema{"type": "array", "items": items} }

func ref(name string) schema { return schema{"$ref": "#/components/schemas/" + name} }

func enum(values ...string) schema { return schema{"type": "string", "enum": values} }

func constant(value string) schema { return schema{"type": "string", "const": value} }

func anyOf(alternatives ...schema) schema { return schema{"anyOf": alternatives} }

// nullable also accepts null: a type array for plain schemas, anyOf for references and
// combinations, which have no type of their own.
func nullable(s schema) schema {
	t, ok := s["type"].(string)
	if !ok {
		return anyOf(s, null())
	}
	out := s.clone()
	out["type"] = []string{t, "null"}
	if c, ok := out["const"]; ok {
		delete(out, "const")
		out["enum"] = []any{c, nil}
	}
	if e, ok := out["enum"].([]string); ok {
		vals := make([]any, 0, len(e)+1)
		for _, v := range e {
			vals = append(vals, v)
		}
		out["enum"] = append(vals, nil)
	}
	return out
}

// clone copies the top level; nested values are shared, which is safe because builders never
// modify a schema after handing it to another.
func (s schema) clone() schema {
	out := make(schema, len(s))
	for k, v := range s {
		out[k] = v
	}
	return out
}

func (s schema) set(key string, value any) schema { s[key] = value; return s }

func (s schema) desc(text string) schema { return s.set("description", text) }
func (s schema) def(value any) schema    { return s.set("default", value) }
func (s schema) min(n int) schema        { return s.set("minimum", n) }
func (s schema) max(n int) schema        { return s.set("maximum", n) }
func (s schema) minLen(n int) schema     { return s.set("minLength", n) }
func (s schema) maxLen(n int) schema     { return s.set("maxLength", n) }
func (s schema) format(f string) schema  { return s.set("format", f) }
func (s schema) deprecated() schema      { return s.set("deprecated", true) }

// openEnded lets an object carry keys beyond its listed properties.
func (s schema) openEnded() schema { return s.set("additionalProperties", true) }

// Parameters.

func pathParam(name, description string) schema {
	return schema{"name": name, "in": "path", "required": true, "schema": str(), "description": description}
}

func queryParam(name string, s schema, description string) schema {
	return schema{"name": name, "in": "query", "required": false, "schema": s, "description": description}
}

func headerParam(name, description string) schema {
	return schema{"name": name, "in": "header", "required": false, "schema": str(), "description": description}
}

// Bodies and responses.

func jsonContent(s schema) schema {
	return schema{"application/json": schema{"schema": s}}
}

// etagHeader is the ETag response header of every single-item or curation-instructions answer.
func etagHeader() schema {
	return schema{"ETag": schema{
		"description": "The resource's `_etag`, wrapped in double quotes unless it already is.",
		"required":    true,
		"schema":      str(),
	}}
}

// locationHeader is the Location response header of an accepted background job or a created
// resource; description says where it points.
func locationHeader(description string) schema {
	return schema{"Location": schema{
		"description": description,
		"required":    true,
		"schema":      str(),
	}}
}

// headers joins response header sets, such as etagHeader() and locationHeader(…).
func headers(sets ...schema) schema {
	out := schema{}
	for _, set := range sets {
		for name, h := range set {
			out[name] = h
		}
	}
	return out
}

// op is one operation object. Its methods add to it and return it, so an operation reads as a
// list of what it takes and what it answers.
type op schema

func operation(id, tag, summary, description string) op {
	o := op{"operationId": id, "tags": []string{tag}, "summary": summary, "responses": schema{}}
	if description != "" {
		o["description"] = description
	}
	return o
}

func (o op) params(ps ...schema) op {
	list, _ := o["parameters"].([]schema)
	o["parameters"] = append(list, ps...)
	return o
}

func (o op) body(s schema, description string) op {
	o["requestBody"] = schema{"required": true, "description": description, "content": jsonContent(s)}
	return o
}

// optionalBody is body for an operation that also runs without one: no bytes, or only
// whitespace, count as an absent body.
func (o op) optionalBody(s schema, description string) op {
	o.body(s, description)
	o["requestBody"].(schema)["required"] = false
	return o
}

// anonymous marks an operation that needs no identity in any auth mode.
func (o op) anonymous() op {
	o["security"] = []schema{}
	return o
}

func (o op) responses() schema { return o["responses"].(schema) }

// ok adds a success response with a JSON body. headers may be nil.
func (o op) ok(status int, description string, body schema, headers schema) op {
	r := schema{"description": description, "content": jsonContent(body)}
	if headers != nil {
		r["headers"] = headers
	}
	o.responses()[strconv.Itoa(status)] = r
	return o
}

// empty adds a success response without a body.
func (o op) empty(status int, description string) op {
	o.responses()[strconv.Itoa(status)] = schema{"description": description}
	return o
}

// fails adds an error response. The body is ErrorResponse, or HTTPValidationError for 422.
// An empty description takes the standard one of that status.
func (o op) fails(status int, description string) op {
	return o.failsWith(status, description, nil)
}

// failsWith is fails with a body schema of its own, for error bodies that carry extra keys.
func (o op) failsWith(status int, description string, body schema) op {
	if description == "" {
		description = standardErrors[status]
	}
	if body == nil {
		body = ref("ErrorResponse")
		if status == 422 {
			body = ref("HTTPValidationError")
		}
	}
	o.responses()[strconv.Itoa(status)] = schema{"description": description, "content": jsonContent(body)}
	return o
}

// common adds the error statuses every operation with a caller identity can answer: 401 and
// 403 from Easy Auth, 403 for a role below the operation's or a cross-origin write, 408 for
// a body that does not arrive in time, 413 and 415 (the body limit and media type apply on
// every route, even where no body is read), 422 for bad parameters or a dev-mode X-User-Id
// over 256 characters, and 500. Statuses the operation already documents are kept.
func (o op) common() op { return o.addMissing(401, 403, 408, 413, 415, 422, 500) }

// withBody adds the statuses of reading a JSON request body.
func (o op) withBody() op { return o.addMissing(413, 415, 422) }

// withStore adds the status of an unreachable store.
func (o op) withStore() op { return o.addMissing(503) }

// withWrites adds the status of a write refused for want of storage space.
func (o op) withWrites() op { return o.addMissing(507) }

func (o op) addMissing(statuses ...int) op {
	for _, status := range statuses {
		if _, ok := o.responses()[strconv.Itoa(status)]; !ok {
			o.fails(status, "")
		}
	}
	return o
}

var standardErrors = map[int]string{
	400: "A rule of this operation is broken.",
	401: "Easy Auth mode and no principal (`UNAUTHENTICATED`).",
	403: "`FORBIDDEN`: the caller's role is below the one the operation needs (the detail names it), " +
		"the principal is refused (allow-lists, a display name alone), or a state-changing request " +
		"comes from another origin.",
	408: "The request body did not arrive within `GTC_REQUEST_TIMEOUT` (`REQUEST_TIMEOUT`); the connection is closed.",
	404: "No such resource (`NOT_FOUND`).",
	409: "A server-side write lost its race three times (`CONCURRENT_MODIFICATION`).",
	412: "`ETAG_MISMATCH`: the token is stale.",
	413: "The body exceeds `GTC_MAX_BODY_BYTES` (`BODY_TOO_LARGE`).",
	415: "The body is not JSON (`UNSUPPORTED_MEDIA_TYPE`).",
	422: "Path, query, header or body values break the schema (`VALIDATION_ERROR`), or the body is " +
		"malformed JSON (`INVALID_JSON`). `errors` lists every problem.",
	500: "Unexpected server fault (`INTERNAL`).",
	503: "The store cannot be reached (`STORE_UNAVAILABLE`).",
	507: "The server is out of storage space (`INSUFFICIENT_STORAGE`); nothing was saved. Free disk space and retry.",
}
