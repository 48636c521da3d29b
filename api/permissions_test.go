// Left out of the fuzz builds with the rest of package api_test (see harness_test.go).

//go:build !fuzzing

package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/agenttools"
	"github.com/gtc-dev/gtc/api"
	"github.com/gtc-dev/gtc/api/openapi"
)

// The operations that destroy data or override another user: they must stay admin-only
// whatever else changes in the table.
var adminOnly = []string{
	"DELETE /v1/datasets/{datasetName}",
	"PUT /v1/datasets/{datasetName}/curation-instructions",
	"DELETE /v1/tags",
	"DELETE /v1/tags/definitions/{tag_key}",
	"POST /v1/ground-truths/recompute-tags",
}

// The curation work: a viewer may do none of it, a curator all of it.
var curatorWork = []string{
	"POST /v1/assignments/self-serve",
	"PUT /v1/assignments/{dataset}/{bucket}/{item_id}",
	"POST /v1/assignments/{dataset}/{bucket}/{item_id}/assign",
	"POST /v1/assignments/{dataset}/{bucket}/{item_id}/duplicate",
	"PUT /v1/ground-truths/{datasetName}/{bucket}/{item_id}",
	"DELETE /v1/ground-truths/{datasetName}/{bucket}/{item_id}",
	"POST /v1/ground-truths",
	"POST /v1/tags",
	"POST /v1/tags/definitions",
	"POST /v1/ground-truths/snapshot",
}

func tableRole(t *testing.T, kind, name string) gtc.Role {
	t.Helper()
	for _, p := range api.Permissions() {
		if p.Kind == kind && p.Name == name {
			return p.Role
		}
	}
	t.Fatalf("the permission table has no %s entry %q", kind, name)
	return gtc.RoleNone
}

func TestPermissionTablePinsTheDestructiveOperations(t *testing.T) {
	t.Parallel()
	for _, op := range adminOnly {
		assert.Equal(t, gtc.RoleAdmin, tableRole(t, "route", op), op)
	}
	for _, op := range curatorWork {
		assert.Equal(t, gtc.RoleCurator, tableRole(t, "route", op), op)
	}
	assert.Equal(t, gtc.RoleAdmin, tableRole(t, "job", api.JobRecomputeTags))
	for _, name := range agenttools.Names() {
		want := gtc.RoleViewer
		if name == agenttools.ToolManageTags || name == agenttools.ToolUndoTagOperation {
			want = gtc.RoleCurator
		}
		assert.Equal(t, want, tableRole(t, "tool", name), "tool %s", name)
	}
	seen := map[string]bool{}
	for _, p := range api.Permissions() {
		key := p.Kind + " " + p.Name
		assert.False(t, seen[key], "one entry per operation: %s", key)
		seen[key] = true
		if p.Kind == "route" && strings.HasPrefix(p.Name, "GET ") {
			assert.LessOrEqual(t, p.Role, gtc.RoleViewer, "every read is open to viewers: %s", p.Name)
		}
	}
}

// operationRequest is a request for one operation of the document: its path with the
// parameters filled from the fixture, and a body when it takes one.
func operationRequest(h *harness, f *permFixture, method, path string) req {
	r := strings.NewReplacer(
		"{datasetName}", f.item.DatasetName, "{dataset}", f.item.DatasetName, "{bucket}", f.item.Bucket,
		"{item_id}", f.item.ID, "{snapshotId}", f.snapshotID, "{name}", "Job", "{id}", "job-none",
		"{tag_key}", "source:sme")
	out := req{Method: method, Path: r.Replace(path)}
	if strings.HasSuffix(path, "/files/{name}") {
		out.Path = strings.Replace(r.Replace(strings.TrimSuffix(path, "{name}")), "/files/Job", "/files/", 1) + "manifest.json"
	}
	if method == http.MethodPut || method == http.MethodPost || method == http.MethodDelete && path == "/v1/tags" {
		out.Body = map[string]any{}
	}
	return out
}

type permFixture struct {
	item       gtc.Key
	snapshotID string
}

func seedPermissions(t *testing.T, h *harness) *permFixture {
	t.Helper()
	it := basicItem("perm", "p-1")
	it["assignedTo"], it["assignedAt"] = "viewer@example.com", "2025-01-01T00:00:00Z"
	h.importItems(it)
	res := h.do(req{Method: http.MethodPost, Path: "/v1/ground-truths/snapshot", Header: roleHeaders("admin@example.com", "admin"),
		Body: map[string]any{"filters": map[string]any{"status": ""}, "delivery": map[string]any{"mode": "artifact"}}})
	require.Equal(t, http.StatusOK, res.Status, string(res.Body))
	return &permFixture{item: h.key("perm", "p-1"), snapshotID: res.Object(t)["snapshotId"].(string)}
}

func roleHeaders(user, roles string) map[string]string {
	return map[string]string{"X-User-Id": user, "X-User-Roles": roles}
}

// TestEveryOperationEnforcesItsRole walks every operation of the served OpenAPI document
// (and every agent tool) for each role: below the operation's role the answer is 403
// FORBIDDEN with a detail naming the role needed and nothing changes; at or above it the
// request is not refused for its role. An operation the table lacks fails the test.
func TestEveryOperationEnforcesItsRole(t *testing.T) {
	t.Parallel()
	doc, err := openapi3.NewLoader().LoadFromData(openapi.Document("/v1", "test-version").JSON())
	require.NoError(t, err)
	var ops []string
	for path, item := range doc.Paths.Map() {
		for method := range item.Operations() {
			ops = append(ops, method+" "+path)
		}
	}
	sort.Strings(ops)
	require.NotEmpty(t, ops)

	// A caller with no role at all: GTC_AUTH_DEFAULT_ROLE=none and no mapped claim.
	roles := append([]gtc.Role{gtc.RoleNone}, gtc.Roles...)
	for _, role := range roles {
		t.Run(role.String(), func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, func(o *api.Options) { o.Auth.DefaultRole = "none" })
			f := seedPermissions(t, h)
			claim := role.String()
			if role == gtc.RoleNone {
				claim = "unmapped-claim"
			}
			who := roleHeaders("viewer@example.com", claim)
			for _, op := range ops {
				method, path, _ := strings.Cut(op, " ")
				routeNeed := tableRole(t, "route", op)
				names := []string{""}
				if path == "/v1/agent/tools/{name}" {
					names = agenttools.Names()
				}
				for _, tool := range names {
					r := operationRequest(h, f, method, path)
					r.Header = who
					label, need := op, routeNeed
					if tool != "" {
						r.Path = "/v1/agent/tools/" + tool
						r.Body = map[string]any{}
						label = op + " " + tool
						// The route's role is checked first, then the tool's.
						if role.Includes(routeNeed) {
							need = tableRole(t, "tool", tool)
						}
					}
					before := h.snapshot()
					res := h.do(r)
					if !role.Includes(need) {
						require.Equal(t, http.StatusForbidden, res.Status, "%s as %s: %s", label, role, res.Body)
						body := res.Object(t)
						assert.Equal(t, "FORBIDDEN", body["code"], label)
						assert.Contains(t, body["detail"], "needs the "+need.String()+" role", label)
						assert.Equal(t, before, h.snapshot(), "%s as %s changed nothing", label, role)
						continue
					}
					refused := res.Status == http.StatusForbidden && strings.Contains(string(res.Body), `"FORBIDDEN"`)
					assert.False(t, refused, "%s as %s is allowed: %s", label, role, res.Body)
					assert.NotEqual(t, http.StatusUnauthorized, res.Status, label)
				}
			}
		})
	}
}

// TestEveryRegisteredRouteIsInTheTable: registering a route without an entry panics, and the
// table has no entry for a route nobody serves.
func TestEveryRegisteredRouteIsInTheTable(t *testing.T) {
	t.Parallel()
	h := newHarness(t, func(o *api.Options) { o.Metrics = http.NotFoundHandler() })
	served := map[string]bool{}
	for _, r := range h.api.Routes() {
		name := r.Method + " " + echoToOpenAPI(r.Path)
		served[name] = true
		tableRole(t, "route", name)
	}
	for _, p := range api.Permissions() {
		if p.Kind == "route" && p.Name != api.StaticFilesRoute && p.Name != api.FrontDoorPage && p.Name != api.DocsPage {
			assert.True(t, served[p.Name], "the table's route %s is served", p.Name)
		}
	}
}

func echoToOpenAPI(p string) string {
	parts := strings.Split(p, "/")
	for i, s := range parts {
		if strings.HasPrefix(s, ":") {
			parts[i] = "{" + s[1:] + "}"
		}
	}
	return strings.Join(parts, "/")
}

// TestMCPToolsFollowTheTable: over MCP a viewer reads but cannot preview a tag change, and
// the refusal names the role; a curator can.
func TestMCPToolsFollowTheTable(t *testing.T) {
	t.Parallel()
	h := newHarness(t)
	ctx := context.Background()
	call := func(roles string) *mcp.CallToolResult {
		cs, err := h.mcpSession(roleHeaders("vic@example.com", roles))
		require.NoError(t, err)
		t.Cleanup(func() { _ = cs.Close() })
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: agenttools.ToolManageTags,
			Arguments: map[string]any{"operation": "delete_tag", "tag": "topic:x"}})
		require.NoError(t, err)
		return res
	}
	res := call("viewer")
	require.True(t, res.IsError)
	data, _ := json.Marshal(res.StructuredContent)
	assert.Contains(t, string(data), `"FORBIDDEN"`)
	assert.Contains(t, res.Content[0].(*mcp.TextContent).Text, "needs the curator role")
	assert.Zero(t, h.calls.count(), "the tool did not run")

	res = call("curator")
	assert.False(t, res.IsError, "%+v", res.Content)
	assert.Equal(t, 1, h.calls.count())
}

// TestReadmeShowsThePermissionTable: the README's table is the table the server enforces.
func TestReadmeShowsThePermissionTable(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../README.md")
	require.NoError(t, err)
	var rows []string
	for _, p := range api.Permissions() {
		role := p.Role.String()
		if p.Role == gtc.RoleNone {
			role = "—"
		}
		rows = append(rows, "| "+p.Kind+" | `"+p.Name+"` | "+role+" | "+p.Note+" |")
	}
	var got []string
	for _, line := range strings.Split(string(readme), "\n") {
		if strings.HasPrefix(line, "| route |") || strings.HasPrefix(line, "| tool |") ||
			strings.HasPrefix(line, "| job |") || strings.HasPrefix(line, "| command |") {
			got = append(got, strings.TrimSpace(line))
		}
	}
	if !slices.Equal(rows, got) {
		t.Errorf("README.md's permission table differs from api.Permissions(); it should read:\n%s", strings.Join(rows, "\n"))
	}
}
