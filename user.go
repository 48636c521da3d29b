package gtc

import (
	"context"
	"slices"
)

// Caller is the identity behind one request or command: a user id and lower-case roles.
type Caller struct {
	UserID string
	Roles  []string
}

// HasRole reports whether the caller holds role (roles are lower-case).
func (c Caller) HasRole(role string) bool { return slices.Contains(c.Roles, role) }

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
