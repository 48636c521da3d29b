package tagging

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAllowList(t *testing.T) {
	got, err := ParseAllowList([]string{" Custom : Escalation ", "", "  ", "source:sme", "SOURCE:SME", "b:x"})
	require.NoError(t, err)
	assert.Equal(t, []string{"b:x", "custom:escalation", "source:sme"}, got)

	got, err = ParseAllowList(nil)
	require.NoError(t, err)
	assert.NotNil(t, got)
	assert.Empty(t, got)

	_, err = ParseAllowList([]string{"source:sme", " nocolon "})
	assert.EqualError(t, err, "GTC_ALLOWED_MANUAL_TAGS contains an invalid tag: Invalid tag format (expected group:value): 'nocolon'")
	_, err = ParseAllowList([]string{"x:"})
	assert.EqualError(t, err, "GTC_ALLOWED_MANUAL_TAGS contains an invalid tag: Invalid tag format (empty group or value): 'x:'")
}

func TestOverlapWithComputed(t *testing.T) {
	reg := defaultRegistry(t)
	got := OverlapWithComputed(reg, []string{"turns:multiturn", "source:sme", "dataset:x", "answer:yes", "dataset:x", "answer:no_answer"})
	assert.Equal(t, []string{"answer:no_answer", "dataset:x", "turns:multiturn"}, got)
	assert.Empty(t, OverlapWithComputed(reg, []string{"source:sme"}))
}

func TestCheckDisjoint(t *testing.T) {
	reg := defaultRegistry(t)
	assert.NoError(t, CheckDisjoint(reg, []string{"custom:x"}, defaultGroups(t)))
	assert.NoError(t, CheckDisjoint(reg, nil, nil))

	err := CheckDisjoint(reg, []string{"turns:singleturn", "custom:x", "dataset:x"}, defaultGroups(t))
	assert.EqualError(t, err, "GTC_ALLOWED_MANUAL_TAGS overlaps computed tag keys: dataset:x, turns:singleturn")

	groups, err := ParseGroups([]byte(`{"manualTagGroups": [
	  {"group": "turns", "tags": ["multiturn", "custom"]},
	  {"group": "dataset", "tags": ["a"]}
	]}`), "test")
	require.NoError(t, err)
	err = CheckDisjoint(reg, []string{"custom:x"}, groups)
	assert.EqualError(t, err, "Manual tag defaults overlap computed tag keys: dataset:a, turns:multiturn")

	// The environment is checked first.
	err = CheckDisjoint(reg, []string{"answer:no_answer"}, groups)
	assert.EqualError(t, err, "GTC_ALLOWED_MANUAL_TAGS overlaps computed tag keys: answer:no_answer")
}

func TestComputedGroupWarnings(t *testing.T) {
	reg := defaultRegistry(t)
	assert.Empty(t, ComputedGroupWarnings(reg, defaultGroups(t)))

	groups, err := ParseGroups([]byte(`{"manualTagGroups": [
	  {"group": "source", "tags": ["x"]},
	  {"group": "answer", "tags": ["yes"]},
	  {"group": "Question_Length", "mutuallyExclusive": true, "tags": ["tiny"]}
	]}`), "test")
	require.NoError(t, err)
	got := ComputedGroupWarnings(reg, groups)
	require.Len(t, got, 2)
	assert.Contains(t, got[0], "'answer'")
	assert.NotContains(t, got[0], "exclusive")
	assert.Contains(t, got[1], "'question_length'")
	assert.Contains(t, got[1], "exclusive")
}

type failingProvider struct{}

func (failingProvider) Name() string { return "tag-store" }
func (failingProvider) AllowedTags(context.Context) ([]string, error) {
	return nil, errors.New("store unreachable")
}

func TestKnownTags(t *testing.T) {
	reg := defaultRegistry(t)
	env := NewAllowListProvider([]string{"custom:escalation", "source:sme", "turns:multiturn", "dataset:x"})
	groups := NewGroupsProvider(defaultGroups(t))
	assert.Equal(t, "env", env.Name())
	assert.Equal(t, "groups-file", groups.Name())

	got, err := KnownTags(context.Background(), []ManualTagProvider{env, groups}, reg)
	require.NoError(t, err)
	assert.Len(t, got, 26, "25 built-in tags plus custom:escalation; source:sme is counted once")
	assert.IsIncreasing(t, got)
	assert.Contains(t, got, "custom:escalation")
	assert.NotContains(t, got, "turns:multiturn")
	assert.NotContains(t, got, "dataset:x")

	got, err = KnownTags(context.Background(), nil, reg)
	require.NoError(t, err)
	assert.NotNil(t, got)
	assert.Empty(t, got)

	_, err = KnownTags(context.Background(), []ManualTagProvider{env, failingProvider{}}, reg)
	assert.EqualError(t, err, "manual tag provider tag-store: store unreachable")
}

func TestProvidersReturnCopies(t *testing.T) {
	env := NewAllowListProvider([]string{"b:x", "a:y"})
	tags, err := env.AllowedTags(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"a:y", "b:x"}, tags)
	tags[0] = "changed"
	again, err := env.AllowedTags(context.Background())
	require.NoError(t, err)
	assert.Equal(t, []string{"a:y", "b:x"}, again)

	gp := NewGroupsProvider(defaultGroups(t))
	assert.Len(t, gp.Schema().Groups, 6)
}
