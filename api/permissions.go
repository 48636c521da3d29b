package api

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/agenttools"
)

// Permission is one entry of the permission table: an operation and the least role that
// may run it.
type Permission struct {
	// Kind is "route" (an HTTP operation), "tool" (an agent tool, over HTTP and MCP),
	// "job" (background work the server runs for a caller) or "command" (a gtc command).
	Kind string
	// Name is the method and path of a route as the OpenAPI document writes it, with the
	// default prefix /v1 ("DELETE /v1/datasets/{datasetName}"), a tool's name, a job's type
	// or a command line.
	Name string
	// Role is the least role. RoleNone on a route means no role is needed: the probes need
	// no principal at all, the frontend's files only the sign-in.
	Role gtc.Role
	// Note says what raises the role within the operation, or who runs it.
	Note string
}

// The permission table. Every route the server registers, every agent tool and every job
// type has an entry: registering a route without one panics, so a new route cannot ship
// without deciding who may call it.
var permissions = []Permission{
	{"route", "GET /healthz", gtc.RoleNone, "no principal needed"},
	{"route", "GET /readyz", gtc.RoleNone, "no principal needed"},
	{"route", "GET /metrics", gtc.RoleViewer, ""},
	{"route", StaticFilesRoute, gtc.RoleNone, "the curator frontend's files (`GTC_FRONTEND_DIR`); a signed-in principal"},
	{"route", FrontDoorPage, gtc.RoleViewer, "gtc's home page with the live counts; the frontend's index instead when `GTC_FRONTEND_DIR` is set"},
	{"route", DocsPage, gtc.RoleViewer, "the API reference, an HTML page"},

	{"route", "GET /v1/openapi.json", gtc.RoleViewer, ""},
	{"route", "GET /v1/schemas", gtc.RoleViewer, ""},
	{"route", "GET /v1/schemas/{name}", gtc.RoleViewer, ""},
	{"route", "GET /v1/config", gtc.RoleViewer, ""},

	{"route", "GET /v1/ground-truths/stats", gtc.RoleViewer, ""},
	{"route", "POST /v1/ground-truths", gtc.RoleCurator, "import"},
	{"route", "GET /v1/ground-truths", gtc.RoleViewer, ""},
	{"route", "GET /v1/ground-truths/{datasetName}", gtc.RoleViewer, ""},
	{"route", "GET /v1/ground-truths/{datasetName}/{bucket}/{item_id}", gtc.RoleViewer, ""},
	{"route", "PUT /v1/ground-truths/{datasetName}/{bucket}/{item_id}", gtc.RoleCurator, ""},
	{"route", "DELETE /v1/ground-truths/{datasetName}/{bucket}/{item_id}", gtc.RoleCurator, "a soft delete; restore with PUT"},
	{"route", "GET /v1/ground-truths/{datasetName}/{bucket}/{item_id}/history", gtc.RoleViewer, "who changed the item, when, and which fields"},
	{"route", "GET /v1/ground-truths/{datasetName}/{bucket}/{item_id}/history/{revision}", gtc.RoleViewer, "the item as it was after a revision"},
	{"route", "GET /v1/ground-truths/{datasetName}/{bucket}/{item_id}/diff", gtc.RoleViewer, "old and new values between two revisions"},
	{"route", "POST /v1/ground-truths/{datasetName}/{bucket}/{item_id}/restore", gtc.RoleCurator, "writes an earlier revision's content as a new revision"},
	{"route", "POST /v1/ground-truths/recompute-tags", gtc.RoleAdmin, "rewrites every selected item"},
	{"route", "GET /v1/ground-truths/snapshot", gtc.RoleViewer, "download of the approved items"},
	{"route", "POST /v1/ground-truths/snapshot", gtc.RoleCurator, "runs an export"},
	{"route", "POST /v1/releases", gtc.RoleCurator, "writes an immutable release"},
	{"route", "GET /v1/releases", gtc.RoleViewer, ""},
	{"route", "GET /v1/releases/{name}", gtc.RoleViewer, "the release's manifest"},
	{"route", "DELETE /v1/releases/{name}", gtc.RoleAdmin, "deletes a release's files; its tombstone keeps the name"},
	{"route", "GET /v1/releases/{name}/files/{file}", gtc.RoleViewer, ""},
	{"route", "GET /v1/releases/{name}/diff/{to}", gtc.RoleViewer, "what changed between two releases, or since one (`current`)"},
	{"route", "GET /v1/exports", gtc.RoleViewer, ""},
	{"route", "GET /v1/exports/{snapshotId}", gtc.RoleViewer, ""},
	{"route", "GET /v1/exports/{snapshotId}/files/{name}", gtc.RoleViewer, ""},
	{"route", "GET /v1/jobs/{id}", gtc.RoleViewer, ""},

	{"route", "POST /v1/assignments/self-serve", gtc.RoleCurator, ""},
	{"route", "GET /v1/assignments/my", gtc.RoleViewer, ""},
	{"route", "PUT /v1/assignments/{dataset}/{bucket}/{item_id}", gtc.RoleCurator, "the assignee only"},
	{"route", "POST /v1/assignments/{dataset}/{bucket}/{item_id}/assign", gtc.RoleCurator, "`force: true` needs admin"},
	{"route", "POST /v1/assignments/{dataset}/{bucket}/{item_id}/duplicate", gtc.RoleCurator, ""},

	{"route", "GET /v1/search", gtc.RoleViewer, ""},

	{"route", "GET /v1/tags/schema", gtc.RoleViewer, ""},
	{"route", "GET /v1/tags", gtc.RoleViewer, ""},
	{"route", "POST /v1/tags", gtc.RoleCurator, "adds to the tag store"},
	{"route", "DELETE /v1/tags", gtc.RoleAdmin, "removes from the tag store"},
	{"route", "GET /v1/tags/glossary", gtc.RoleViewer, ""},
	{"route", "POST /v1/tags/definitions", gtc.RoleCurator, ""},
	{"route", "DELETE /v1/tags/definitions/{tag_key}", gtc.RoleAdmin, ""},

	{"route", "GET /v1/datasets", gtc.RoleViewer, ""},
	{"route", "GET /v1/datasets/{datasetName}/curation-instructions", gtc.RoleViewer, ""},
	{"route", "PUT /v1/datasets/{datasetName}/curation-instructions", gtc.RoleAdmin, ""},
	{"route", "DELETE /v1/datasets/{datasetName}", gtc.RoleAdmin, "deletes every item of the dataset"},

	{"route", "GET /v1/agent/tools", gtc.RoleViewer, ""},
	{"route", "POST /v1/agent/tools/{name}", gtc.RoleViewer, "and the tool's role below"},
	{"route", "POST /mcp", gtc.RoleViewer, "and the tool's role below"},

	{"tool", agenttools.ToolManageTags, gtc.RoleCurator, "previews and executions"},
	{"tool", agenttools.ToolUndoTagOperation, gtc.RoleCurator, "another user's operation needs admin"},
	{"tool", agenttools.ToolListTagOperations, gtc.RoleViewer, ""},
	{"tool", agenttools.ToolTagStats, gtc.RoleViewer, ""},
	{"tool", agenttools.ToolDatasetStats, gtc.RoleViewer, ""},
	{"tool", agenttools.ToolSearchItems, gtc.RoleViewer, ""},
	{"tool", agenttools.ToolGetItem, gtc.RoleViewer, ""},
	{"tool", agenttools.ToolGetItemHistory, gtc.RoleViewer, ""},
	{"tool", agenttools.ToolCompareReleases, gtc.RoleViewer, ""},

	{"job", JobRecomputeTags, gtc.RoleAdmin, "`POST /v1/ground-truths/recompute-tags?async=true`"},
	{"job", "agent tag execution", gtc.RoleCurator, "runs on after `manage_tags` or `undo_tag_operation` answers"},

	{"command", "gtc serve, seed, import, export, recompute-tags, migrate, backup, history, release", gtc.RoleAdmin,
		"run with the store's own credentials, outside the API: whoever can run them has admin power"},
}

// StaticFilesRoute is the table's name of the curator frontend's files, which a middleware
// serves for GET requests that match no route.
const StaticFilesRoute = "GET /{file}"

// JobRecomputeTags is the job type of an asynchronous tag recompute.
const JobRecomputeTags = "recompute-tags"

// Permissions returns the permission table.
func Permissions() []Permission { return append([]Permission(nil), permissions...) }

var echoParam = regexp.MustCompile(`:([A-Za-z_]+)`)

// routeName is the permission table's name of a registered route: the method and the
// OpenAPI form of the path, with the server's prefix written as /v1.
func (s *Server) routeName(method, path string) string {
	if s.opts.Prefix != "/v1" && (path == s.opts.Prefix || strings.HasPrefix(path, s.opts.Prefix+"/")) {
		path = "/v1" + strings.TrimPrefix(path, s.opts.Prefix)
	}
	return method + " " + echoParam.ReplaceAllString(path, "{$1}")
}

// permissionOf returns the table's entry of kind and name.
func permissionOf(kind, name string) (Permission, bool) {
	for _, p := range permissions {
		if p.Kind == kind && p.Name == name {
			return p, true
		}
	}
	return Permission{}, false
}

// ToolRole is the least role of an agent tool; ok is false for a name the table lacks.
func ToolRole(name string) (gtc.Role, bool) {
	p, ok := permissionOf("tool", name)
	return p.Role, ok
}

// AuthorizeTool is agent.Options.Authorize: it refuses a caller whose role is below the
// tool's, and a tool the table lacks.
func AuthorizeTool(c gtc.Caller, tool string) error {
	need, ok := ToolRole(tool)
	if !ok {
		return &gtc.Error{Code: gtc.CodeForbidden, Message: "Forbidden: the tool " + tool + " has no entry in the permission table"}
	}
	return c.Require(need, "the tool "+tool)
}

// jobRole is the least role of a job type; a type the table lacks is a programming error.
func jobRole(typ string) gtc.Role {
	p, ok := permissionOf("job", typ)
	if !ok {
		panic("api: job type " + typ + " has no entry in the permission table (api/permissions.go)")
	}
	return p.Role
}

// guard is the middleware of a registered route: it refuses a caller below the route's
// role with 403 FORBIDDEN naming the role needed, before the body is read. A route the
// table lacks is a programming error: registering it panics.
func (s *Server) guard(method, path string) echo.MiddlewareFunc {
	name := s.routeName(method, path)
	p, ok := permissionOf("route", name)
	if !ok {
		panic(fmt.Sprintf("api: route %s has no entry in the permission table (api/permissions.go)", name))
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		if p.Role == gtc.RoleNone {
			return next
		}
		return func(c echo.Context) error {
			if err := gtc.CallerFrom(c.Request().Context()).Require(p.Role, name); err != nil {
				return err
			}
			return next(c)
		}
	}
}

// authorizeTool refuses, before the body is read, a tool call whose tool needs a role the
// caller lacks. It runs after knownTool, so an unknown name stays a 404.
func (s *Server) authorizeTool(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if err := AuthorizeTool(gtc.CallerFrom(c.Request().Context()), param(c, "name")); err != nil {
			return err
		}
		return next(c)
	}
}
