package migrate_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc/migrate"
	"github.com/gtc-dev/gtc/tagging"
)

// TestCleanTagStore is the tag-store clean-up of gtc migrate: what fails
// normalization or is a computed key (static or under a dynamic prefix) goes; the rest is
// stored normalized.
func TestCleanTagStore(t *testing.T) {
	reg, err := tagging.NewDefaultRegistry()
	require.NoError(t, err)
	keep, removed := migrate.CleanTagStore(
		[]string{"Source:SME", "source:sme", "topic:install", "turns:multiturn", "dataset:support", "Turns:MultiTurn",
			"nocolon", "x:", "custom:long doc", "question_length:short", "answer:yes"},
		tagging.Normalize, reg.IsComputed)
	assert.Equal(t, []string{"answer:yes", "custom:long doc", "source:sme", "topic:install"}, keep)
	assert.Equal(t, []string{"Turns:MultiTurn", "dataset:support", "nocolon", "question_length:short", "turns:multiturn", "x:"}, removed)

	keep, removed = migrate.CleanTagStore(nil, tagging.Normalize, reg.IsComputed)
	assert.Equal(t, []string{}, keep)
	assert.Equal(t, []string{}, removed)
}
