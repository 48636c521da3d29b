package api

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/gtc-dev/gtc"
)

// AuthOptions configure how the caller of a request is worked out, and the role it acts
// with.
type AuthOptions struct {
	// EasyAuth selects Easy Auth headers; false is dev mode.
	EasyAuth bool
	// DevUserID is the dev mode user when X-User-Id is absent.
	DevUserID string
	// DevUserRoles are the role claims of a dev mode request without X-User-Roles
	// (GTC_DEV_USER_ROLES); nil is admin.
	DevUserRoles        []string
	AnonymousPaths      []string
	AllowedEmailDomains []string
	AllowedObjectIDs    []string
	// RoleClaims maps lower-case role claim values to the role they grant
	// (GTC_AUTH_ADMIN_ROLES, GTC_AUTH_CURATOR_ROLES, GTC_AUTH_VIEWER_ROLES); nil is
	// DefaultRoleClaims. A caller acts with the highest role its claims grant.
	RoleClaims map[string]gtc.Role
	// DefaultRole is the role of a caller none of whose claims is mapped
	// (GTC_AUTH_DEFAULT_ROLE): viewer, curator, admin or none; "" is curator.
	DefaultRole string
	// AllowNameOnly accepts an Easy Auth principal whose only identifying claim is a
	// display name (GTC_EZAUTH_ALLOW_NAME_ONLY); such a name is chosen by the user.
	AllowNameOnly bool
}

// DefaultRoleClaims is the claim mapping when none is configured: each role's own name,
// and team-lead for admin.
func DefaultRoleClaims() map[string]gtc.Role {
	return map[string]gtc.Role{"viewer": gtc.RoleViewer, "curator": gtc.RoleCurator, "admin": gtc.RoleAdmin, "team-lead": gtc.RoleAdmin}
}

const maxUserIDChars = 256

// resolver is AuthOptions prepared once for every request: the claim mapping and default
// role resolved, the allow-lists lower-cased.
type resolver struct {
	a           AuthOptions
	claims      map[string]gtc.Role
	defaultRole gtc.Role
	devRoles    []string
	domains     map[string]bool // allowed e-mail domains, ASCII lower-case
	objectIDs   map[string]bool // allowed object ids, ASCII lower-case
}

func newResolver(a AuthOptions) *resolver {
	r := &resolver{a: a, claims: a.RoleClaims, defaultRole: gtc.RoleCurator, devRoles: a.DevUserRoles,
		domains: asciiSet(a.AllowedEmailDomains), objectIDs: asciiSet(a.AllowedObjectIDs)}
	if r.claims == nil {
		r.claims = DefaultRoleClaims()
	}
	if a.DefaultRole != "" {
		r.defaultRole, _ = gtc.ParseRole(a.DefaultRole)
	}
	if r.devRoles == nil {
		r.devRoles = []string{"admin"}
	}
	return r
}

// asciiSet is the set of the non-empty ASCII values of list, lower-cased; other values
// could never match (see allowed) and are left out.
func asciiSet(list []string) map[string]bool {
	set := map[string]bool{}
	for _, v := range list {
		if l, ok := asciiLower(v); ok && l != "" {
			set[l] = true
		}
	}
	return set
}

// roleOf is the role a caller with these (lower-case) claims acts with: the highest its
// claims map to, else the default role.
func (r *resolver) roleOf(claims []string) gtc.Role {
	best, mapped := gtc.RoleNone, false
	for _, c := range claims {
		if role, ok := r.claims[c]; ok {
			mapped = true
			best = max(best, role)
		}
	}
	if mapped {
		return best
	}
	return r.defaultRole
}

// CallerResolver returns the function that works out the caller of a request from its
// headers: in dev mode X-User-Id (else the configured dev user) and X-User-Roles (else the
// configured dev roles); in Easy Auth mode the principal headers and the allow-lists, where
// X-User-Id counts for nothing. The caller's role comes from its role claims through
// RoleClaims, else DefaultRole. A missing principal is UNAUTHENTICATED, a refused one
// FORBIDDEN, an X-User-Id over 256 characters a 422. The identity middleware and the MCP
// tool handler (agent.Options.ResolveCaller) both use it, so a tool call over /mcp has the
// caller the same request would have on /v1.
func CallerResolver(a AuthOptions) func(http.Header) (gtc.Caller, error) {
	r := newResolver(a)
	return func(h http.Header) (gtc.Caller, error) {
		if !a.EasyAuth {
			return r.devCaller(h)
		}
		p, ok := readPrincipal(h)
		if !ok {
			return gtc.Caller{}, &gtc.Error{Code: gtc.CodeUnauthenticated, Message: "Unauthorized"}
		}
		if p.email == "" && p.objectID == "" && !a.AllowNameOnly {
			return gtc.Caller{}, &gtc.Error{Code: gtc.CodeForbidden,
				Message: "Forbidden: the principal has no e-mail or object id claim; a display name alone, which its owner can choose, is not an identity"}
		}
		if !r.allowed(p) {
			return gtc.Caller{}, &gtc.Error{Code: gtc.CodeForbidden, Message: "Forbidden"}
		}
		return gtc.Caller{UserID: p.userID(), Role: r.roleOf(p.roles), Roles: p.roles}, nil
	}
}

// identity resolves the caller and stores it in the request context. /healthz and /readyz
// are always anonymous. In Easy Auth mode so are the configured extra paths: there a caller
// without a valid principal reads as an anonymous viewer, so an anonymous path can never
// be used to change anything.
func (s *Server) identity(next echo.HandlerFunc) echo.HandlerFunc {
	anon := map[string]bool{}
	for _, p := range s.opts.Auth.AnonymousPaths {
		anon[p] = true
	}
	return func(c echo.Context) error {
		r := c.Request()
		caller := gtc.Caller{UserID: "anonymous"}
		// Probes are anonymous in every mode; no header can make them fail.
		if r.URL.Path != "/healthz" && r.URL.Path != "/readyz" {
			var err error
			caller, err = s.resolveCaller(r.Header)
			if err != nil {
				if !s.opts.Auth.EasyAuth || !anon[r.URL.Path] {
					return err
				}
				caller = gtc.Caller{UserID: "anonymous", Role: gtc.RoleViewer}
			}
		}
		c.Set(ctxUser, caller.UserID)
		c.SetRequest(r.WithContext(gtc.WithCaller(r.Context(), caller)))
		return next(c)
	}
}

func (r *resolver) devCaller(h http.Header) (gtc.Caller, error) {
	id := strings.TrimSpace(h.Get("X-User-Id"))
	if utf8.RuneCountInString(id) > maxUserIDChars {
		return gtc.Caller{}, gtc.ValidationError([]gtc.FieldError{{Field: "header.X-User-Id", Message: "must be at most 256 characters"}})
	}
	if id == "" {
		id = r.a.DevUserID
	}
	roles := r.devRoles
	if vals, ok := h["X-User-Roles"]; ok {
		roles = nil
		for _, v := range vals {
			roles = append(roles, splitRoles(v)...)
		}
	}
	return gtc.Caller{UserID: id, Role: r.roleOf(roles), Roles: roles}, nil
}

func splitRoles(v string) []string {
	var out []string
	for _, r := range strings.Split(v, ",") {
		if r = strings.ToLower(strings.TrimSpace(r)); r != "" {
			out = append(out, r)
		}
	}
	return out
}

type principal struct {
	objectID string
	email    string
	name     string
	roles    []string
}

// userID is the e-mail, else the object id, else the display name (accepted only with
// AllowNameOnly), else "anonymous".
func (p principal) userID() string {
	for _, v := range []string{p.email, p.objectID, p.name} {
		if v != "" {
			return v
		}
	}
	return "anonymous"
}

type clientPrincipal struct {
	AuthType string `json:"auth_typ"`
	NameType string `json:"name_typ"`
	RoleType string `json:"role_typ"`
	Claims   []struct {
		Type  string `json:"typ"`
		Value string `json:"val"`
	} `json:"claims"`
}

var (
	objectIDClaims = []string{"oid", "http://schemas.microsoft.com/identity/claims/objectidentifier"}
	emailClaims    = []string{"preferred_username", "emails", "email", "upn",
		"http://schemas.xmlsoap.org/ws/2005/05/identity/claims/emailaddress",
		"http://schemas.xmlsoap.org/ws/2005/05/identity/claims/upn"}
	nameClaim = "http://schemas.xmlsoap.org/ws/2005/05/identity/claims/name"
	roleClaim = "http://schemas.microsoft.com/ws/2008/06/identity/claims/role"
)

// readPrincipal reads X-MS-CLIENT-PRINCIPAL (base64 JSON), or falls back to the
// X-MS-CLIENT-PRINCIPAL-NAME / -ID pair when that header is missing. A header that is
// present but unreadable counts as no principal, and so does one sent more than once: Easy
// Auth sends each once, so a second value was added by someone else and neither can be
// trusted to be the platform's.
func readPrincipal(h map[string][]string) (principal, bool) {
	ambiguous := false
	get := func(k string) (string, bool) {
		v, ok := h[k]
		if !ok || len(v) == 0 {
			return "", false
		}
		if len(v) > 1 {
			ambiguous = true
		}
		return v[0], true
	}
	raw, present := get("X-Ms-Client-Principal")
	if ambiguous {
		return principal{}, false
	}
	if !present {
		name, _ := get("X-Ms-Client-Principal-Name")
		oid, _ := get("X-Ms-Client-Principal-Id")
		if ambiguous {
			return principal{}, false
		}
		name, oid = strings.TrimSpace(name), strings.TrimSpace(oid)
		if name == "" && oid == "" {
			return principal{}, false
		}
		p := principal{name: name, objectID: oid}
		if strings.Contains(name, "@") {
			p.email = name
		}
		return p, true
	}
	data, ok := decodeBase64(strings.TrimSpace(raw))
	if !ok || !utf8.Valid(data) {
		// encoding/json would read invalid UTF-8 as U+FFFD: not JSON (RFC 8259), so no
		// principal, rather than a user id nobody has.
		return principal{}, false
	}
	var cp clientPrincipal
	if err := json.Unmarshal(data, &cp); err != nil {
		return principal{}, false
	}
	claim := func(types ...string) string {
		for _, t := range types {
			if t == "" {
				continue
			}
			for _, c := range cp.Claims {
				if strings.EqualFold(c.Type, t) && strings.TrimSpace(c.Value) != "" {
					return strings.TrimSpace(c.Value)
				}
			}
		}
		return ""
	}
	p := principal{
		objectID: claim(objectIDClaims...),
		email:    claim(emailClaims...),
		name:     claim("name", cp.NameType, nameClaim),
	}
	for _, c := range cp.Claims {
		for _, t := range []string{"roles", "role", cp.RoleType, roleClaim} {
			if t != "" && strings.EqualFold(c.Type, t) {
				if v := strings.ToLower(strings.TrimSpace(c.Value)); v != "" {
					p.roles = append(p.roles, v)
				}
				break
			}
		}
	}
	if p.objectID == "" && p.email == "" && p.name == "" && len(cp.Claims) == 0 {
		return principal{}, false
	}
	return p, true
}

func decodeBase64(s string) ([]byte, bool) {
	s = strings.TrimRight(s, "=")
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		if b, err := enc.DecodeString(s); err == nil {
			return b, true
		}
	}
	return nil, false
}

// allowed applies the allow-lists: with neither set every principal passes; otherwise the
// object id or the e-mail domain (the text after the last @) must match one listed. Both
// compare ASCII case-insensitively, and a value with any other character never matches:
// Unicode case folding would let a look-alike (a Kelvin sign for K, a long s for s) pass
// for a listed domain.
func (r *resolver) allowed(p principal) bool {
	if len(r.a.AllowedEmailDomains) == 0 && len(r.a.AllowedObjectIDs) == 0 {
		return true
	}
	if oid, ok := asciiLower(p.objectID); ok && r.objectIDs[oid] {
		return true
	}
	if at := strings.LastIndex(p.email, "@"); at >= 0 {
		if domain, ok := asciiLower(p.email[at+1:]); ok && r.domains[domain] {
			return true
		}
	}
	return false
}

// asciiLower lower-cases an ASCII string; ok is false when s has any other byte.
func asciiLower(s string) (string, bool) {
	b := []byte(s)
	for i, c := range b {
		if c >= utf8.RuneSelf {
			return "", false
		}
		if 'A' <= c && c <= 'Z' {
			b[i] = c + ('a' - 'A')
		}
	}
	return string(b), true
}
