package main

import (
	"context"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/sqlite"
)

// historyStore imports support/q1 with the binary, then changes it through the store three
// times: alice its comment, bob its status, and an agent operation a long comment.
func historyStore(t *testing.T) []string {
	t.Helper()
	data := t.TempDir()
	e := env(data)
	item := `{"id":"q1","datasetName":"support","comment":"needs a check","history":[{"role":"user","msg":"Where is the installer?"},{"role":"assistant","msg":"On the downloads page."}]}`
	_, stderr, code := runGTCWithStdin(t, e, item+"\n", "import", "-", "--progress", "none")
	require.Equal(t, 0, code, stderr)

	ctx := context.Background()
	st, err := sqlite.Open(ctx, sqlite.Options{Path: filepath.Join(data, "gtc.db")})
	require.NoError(t, err)
	k, err := st.Items().Locate(ctx, "support", "q1")
	require.NoError(t, err)
	cur, err := st.Items().Get(ctx, k)
	require.NoError(t, err)
	edit := func(user string, ch gtc.Change, change func(*gtc.Item)) {
		next := cur.Clone()
		change(next)
		cur, err = st.Items().Replace(gtc.WithChange(gtc.WithCaller(ctx, gtc.Caller{UserID: user}), ch), cur, next)
		require.NoError(t, err)
	}
	edit("alice@example.com", gtc.Change{Source: gtc.SourceAPI}, func(it *gtc.Item) { it.Comment = "checked against the docs" })
	edit("bob@example.com", gtc.Change{Source: gtc.SourceAssignment}, func(it *gtc.Item) { it.Status = gtc.StatusApproved })
	const op = "op_01JD0000000000000000000000"
	edit("carol@example.com", gtc.Change{Source: gtc.SourceAgentPrefix + op, OperationID: op},
		func(it *gtc.Item) { it.Comment = strings.Repeat("ü", 100) })
	require.NoError(t, st.Close())
	return e
}

// fields splits a printed line into its columns.
func fields(line string) []string {
	return regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(line), -1)
}

func TestHistoryPrintsRevisionsNewestFirst(t *testing.T) {
	e := historyStore(t)
	out, stderr, code := runGTC(t, e, "history", "support", "q1")
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 4, out)
	rfc3339 := regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`)
	want := [][]string{
		{"r4", "carol@example.com", "agent:op_01JD0000000000000000000000", "/comment"},
		{"r3", "bob@example.com", "assignment", "/status"},
		{"r2", "alice@example.com", "api", "/comment"},
		{"r1", "", "import", "(whole item)"},
	}
	for i, line := range lines {
		f := fields(line)
		require.Len(t, f, 5, line)
		assert.Equal(t, want[i][0], f[0])
		assert.Regexp(t, rfc3339, f[1])
		if want[i][1] != "" {
			assert.Equal(t, want[i][1], f[2])
		} else {
			assert.True(t, strings.HasPrefix(f[2], "cli:"), "the import is the command line's: %s", f[2])
		}
		assert.Equal(t, want[i][2], f[3])
		assert.Equal(t, want[i][3], f[4])
	}
	assert.NotContains(t, stderr, "not shown")

	out, stderr, code = runGTC(t, e, "history", "--limit", "2", "support", "q1")
	require.Equal(t, 0, code, stderr)
	require.Len(t, strings.Split(strings.TrimSuffix(out, "\n"), "\n"), 2, out)
	assert.True(t, strings.HasPrefix(out, "r4 "))
	assert.Contains(t, stderr, "older revisions than r3 not shown")
}

func TestHistoryDiff(t *testing.T) {
	e := historyStore(t)
	out, stderr, code := runGTC(t, e, "history", "support", "q1", "--diff", "1..2")
	require.Equal(t, 0, code, stderr)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	assert.Equal(t, "support/q1 r1..r2: 1 change", lines[0])
	require.Len(t, lines, 2, out)
	assert.Equal(t, []string{"replace", "/comment", `"needs a check" → "checked against the docs"`}, fields(lines[1]))

	// To the current revision: the status, and the long comment shortened with its size.
	out, stderr, code = runGTC(t, e, "history", "support", "q1", "--diff", "2..")
	require.Equal(t, 0, code, stderr)
	lines = strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	assert.Equal(t, "support/q1 r2..r4: 2 changes", lines[0])
	require.Len(t, lines, 3, out)
	byPath := map[string][]string{}
	for _, l := range lines[1:] {
		f := fields(l)
		byPath[f[1]] = f
	}
	assert.Equal(t, []string{"replace", "/status", `"draft" → "approved"`}, byPath["/status"])
	long := `"` + strings.Repeat("ü", 39) + "… (202 bytes)"
	assert.Equal(t, []string{"replace", "/comment", `"checked against the docs" → ` + long}, byPath["/comment"])

	out, stderr, code = runGTC(t, e, "history", "support", "q1", "--diff", "3..3")
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "support/q1 r3..r3: 0 changes\n", out)
}

func TestHistoryErrors(t *testing.T) {
	e := historyStore(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"history", "support"}, "usage: gtc history DATASET ID"},
		{[]string{"history", "support", "q1", "--diff", "3"}, `--diff "3": must be R1..R2 or R1..`},
		{[]string{"history", "support", "q1", "--diff", "x..2"}, `revision "x": must be a positive integer`},
		{[]string{"history", "support", "q1", "--diff", "3..1"}, "R1 must not be after R2"},
		{[]string{"history", "support", "q1", "--limit", "0"}, "--limit 0: must be at least 1"},
		{[]string{"history", "support", "nope"}, "history: no item support/nope"},
		{[]string{"history", "other", "q1", "--diff", "1.."}, "history: no item other/q1"},
		{[]string{"history", "support", "q1", "--diff", "1..9"}, "history: item q1 has no revision 9"},
		{[]string{"history", "support", "q1", "--diff", "7.."}, "history: item q1 has no revision 7"},
	} {
		out, stderr, code := runGTC(t, e, tc.args...)
		assert.Equal(t, 2, code, "%v: %s", tc.args, stderr)
		assert.Contains(t, stderr, tc.want, tc.args)
		assert.Empty(t, out, tc.args)
	}
}
