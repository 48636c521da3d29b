package gtc

import (
	"context"
	"slices"
)

// Caller is the identity behind one request or command: a user id, the role it acts with,
// and the lower-case role claims it presented (the raw values the role was mapped from).
type Caller struct {
	UserID string
	Role   Role
	Roles  []string
}

// HasRole reports whether the caller presented the role claim role (lower-case), or acts
// with the role of that name.
func (c Caller) HasRole(role string) bool {
	return slices.Contains(c.Roles, role) || c.Role != RoleNone && c.Role.String() == role
}

type callerKey struct{}

// WithCaller returns a context carrying c.
func WithCaller(ctx context.Context, c Caller) context.Context {
	return context.WithValue(ctx, callerKey{}, c)
}

// CallerFrom returns the caller stored in ctx, or the anonymous caller.
func CallerFrom(ctx context.Context) Caller {
	if c, ok := ctx.Value(callerKey{}).(Caller); ok {
		return c
	}
	return Caller{UserID: "anonymous"}
}
