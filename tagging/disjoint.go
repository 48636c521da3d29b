package tagging

import (
	"context"
	"fmt"
	"strings"

	gtc "github.com/gtc-dev/gtc"
)

// OverlapWithComputed returns the tags that are reserved for computed tags
// (IsComputed(t, nil): a static key or under a dynamic prefix), sorted and unique. Every
// manual-tag provider is checked with it at startup.
func OverlapWithComputed(reg *Registry, tags []string) []string {
	var out []string
	for _, t := range tags {
		if reg.IsComputed(t, nil) {
			out = append(out, t)
		}
	}
	return sortedUnique(out)
}

// CheckDisjoint is step 5 of the startup checks for the environment allowlist and the groups
// file: neither may list a computed tag. groups may be nil. The tag store is checked
// separately, with CheckStoreOverlap, when it is readable.
func CheckDisjoint(reg *Registry, allow []string, groups *Groups) error {
	if o := OverlapWithComputed(reg, allow); len(o) > 0 {
		return specError("GTC_ALLOWED_MANUAL_TAGS overlaps computed tag keys: %s", strings.Join(o, ", "))
	}
	if groups != nil {
		if o := OverlapWithComputed(reg, groups.AllowedTags()); len(o) > 0 {
			return specError("Manual tag defaults overlap computed tag keys: %s", strings.Join(o, ", "))
		}
	}
	return nil
}

// CheckStoreOverlap is the last tag startup check: the tag store against the computed keys.
// When the store can be read, its tags that are reserved for computed tags are a startup
// error naming them (only data carried over from the reference GTC backend can do that;
// `gtc migrate` removes them). When it cannot be read, startup goes on: the result is no
// error but a warning naming the cause, for the caller to log (readiness is /readyz's
// business).
//
//lint:ignore ST1008 the error comes first on purpose: it is the answer callers must act on, the warning is only logged
func CheckStoreOverlap(ctx context.Context, reg *Registry, tags gtc.TagStore) (err error, warning string) {
	stored, lerr := NewTagStoreProvider(tags, nil).AllowedTags(ctx)
	if lerr != nil {
		return nil, fmt.Sprintf("Tag store could not be read at startup, so its overlap with computed tag keys was not checked: %v", lerr)
	}
	if o := OverlapWithComputed(reg, stored); len(o) > 0 {
		return specError("Tag store overlaps computed tag keys: %s", strings.Join(o, ", ")), ""
	}
	return nil, ""
}

// ComputedGroupWarnings returns the non-fatal tag startup warnings: one per groups-file
// group named like the group of a computed key. Such a group is legal (only keys are
// reserved), but an exclusive rule on it also sees the computed tag.
func ComputedGroupWarnings(reg *Registry, groups *Groups) []string {
	computed := map[string]struct{}{}
	for _, k := range reg.Keys() {
		if g, ok := tagGroup(k); ok {
			computed[g] = struct{}{}
		}
	}
	out := []string{}
	if groups == nil {
		return out
	}
	for _, g := range groups.specs {
		if _, clash := computed[g.Name]; !clash {
			continue
		}
		msg := fmt.Sprintf("Manual tag group '%s' is also the group of computed tags", g.Name)
		if g.Exclusive {
			msg += "; its exclusive rule also sees the computed tag and rejects items that carry a manual value in it"
		}
		out = append(out, msg)
	}
	return out
}
