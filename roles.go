package gtc

import "strings"

// Role is what a caller may do. Each role includes the ones below it: a viewer reads, a
// curator also does the curation work (editing, assigning, importing, tagging, exporting),
// an admin also does what destroys data or overrides another user (deleting a dataset,
// editing curation instructions, deleting tags and definitions, recomputing every item,
// forcing an assignment, undoing another user's agent operation).
type Role int8

// The roles, in increasing order. RoleNone is a caller with no role: it may reach only what
// needs no principal (the probes).
const (
	RoleNone Role = iota
	RoleViewer
	RoleCurator
	RoleAdmin
)

// Roles lists the roles a caller can hold, lowest first.
var Roles = []Role{RoleViewer, RoleCurator, RoleAdmin}

// String is the role's name: viewer, curator, admin, or none.
func (r Role) String() string {
	switch r {
	case RoleViewer:
		return "viewer"
	case RoleCurator:
		return "curator"
	case RoleAdmin:
		return "admin"
	default:
		return "none"
	}
}

// ParseRole reads a role name (viewer, curator, admin or none), ignoring case and
// surrounding spaces.
func ParseRole(s string) (Role, bool) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "viewer":
		return RoleViewer, true
	case "curator":
		return RoleCurator, true
	case "admin":
		return RoleAdmin, true
	case "none":
		return RoleNone, true
	}
	return RoleNone, false
}

// Includes reports whether a caller holding r may do what needs need.
func (r Role) Includes(need Role) bool { return r >= need }

// RoleError is the refusal of a caller whose role is below need: 403 FORBIDDEN, with a
// detail naming what was asked, the role it needs and the role the caller has.
func RoleError(what string, need, have Role) *Error {
	return &Error{Code: CodeForbidden,
		Message: "Forbidden: " + what + " needs the " + need.String() + " role; you have " + roleArticle(have)}
}

func roleArticle(r Role) string {
	if r == RoleNone {
		return "no role"
	}
	return "the " + r.String() + " role"
}

// Require returns nil when the caller's role includes need, else the RoleError for what.
func (c Caller) Require(need Role, what string) error {
	if c.Role.Includes(need) {
		return nil
	}
	return RoleError(what, need, c.Role)
}
