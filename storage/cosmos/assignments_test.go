package cosmos_test

import (
	"encoding/json"
	"sort"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/cosmos"
	"github.com/gtc-dev/gtc/storage/cosmos/cosmostest"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

// assignmentRecords reads every record of the assignments container as "pk id".
func assignmentRecords(t *testing.T, env testenv.CosmosEnv, st *cosmos.Store) []string {
	t.Helper()
	ctr := cosmostest.Container(t, env, st, st.Containers().Assignments)
	pager := ctr.NewQueryItemsPager("SELECT * FROM c", azcosmos.NewPartitionKey(), nil)
	out := []string{}
	for pager.More() {
		page, err := pager.NextPage(t.Context())
		require.NoError(t, err)
		for _, raw := range page.Items {
			var r struct {
				ID, PK, DocType, DatasetName, Bucket string
				GroundTruthID                        string `json:"ground_truth_id"`
			}
			require.NoError(t, json.Unmarshal(raw, &r))
			assert.Equal(t, "sme-assignment", r.DocType)
			assert.Equal(t, r.DatasetName+"|"+r.Bucket+"|"+r.GroundTruthID, r.ID)
			out = append(out, r.PK+" "+r.ID)
		}
	}
	sort.Strings(out)
	return out
}

// Behaviour 31: assignment records follow assignedTo changes and disappear with the dataset.
func TestAssignmentRecordsFollowTheItems(t *testing.T) {
	env := testenv.Cosmos(t)
	st, _ := cosmostest.Open(t, env, nil)
	t.Cleanup(func() { _ = st.Close() })
	ctx := t.Context()
	at := time.Date(2025, 5, 1, 12, 0, 0, 0, time.UTC)

	a := newItem("ds", "a")
	a.AssignedTo, a.AssignedAt = ptr("ann@example.com"), &at
	ca, err := st.Items().Create(ctx, a)
	require.NoError(t, err)
	b, err := st.Items().Create(ctx, newItem("ds", "b"))
	require.NoError(t, err)
	other := newItem("other", "c")
	other.AssignedTo, other.AssignedAt = ptr("ann@example.com"), &at
	_, err = st.Items().Create(ctx, other)
	require.NoError(t, err)
	rec := func(user string, it *gtc.Item) string {
		return "sme:" + user + " " + it.DatasetName + "|" + it.Bucket + "|" + it.ID
	}
	assert.Equal(t, []string{rec("ann@example.com", ca), rec("ann@example.com", other)}, assignmentRecords(t, env, st),
		"a record per assigned item, none for the unassigned one")

	// Reassign a to bob, assign b to bob: ann's record for a goes, bob gets two.
	_, err = gtc.Update(ctx, st.Items(), ca.Key(), func(cur *gtc.Item) (*gtc.Item, error) {
		cur.AssignedTo = ptr("bob@example.com")
		return cur, nil
	})
	require.NoError(t, err)
	_, err = gtc.Update(ctx, st.Items(), b.Key(), func(cur *gtc.Item) (*gtc.Item, error) {
		cur.AssignedTo, cur.AssignedAt = ptr("bob@example.com"), &at
		return cur, nil
	})
	require.NoError(t, err)
	want := []string{rec("ann@example.com", other), rec("bob@example.com", ca), rec("bob@example.com", b)}
	sort.Strings(want)
	assert.Equal(t, want, assignmentRecords(t, env, st))

	// Unassign b: its record goes.
	_, err = gtc.Update(ctx, st.Items(), b.Key(), func(cur *gtc.Item) (*gtc.Item, error) {
		cur.AssignedTo, cur.AssignedAt = nil, nil
		return cur, nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{rec("ann@example.com", other), rec("bob@example.com", ca)}, assignmentRecords(t, env, st))

	// Deleting the dataset removes its records and nothing else.
	del, err := st.Items().DeleteDataset(ctx, "ds")
	require.NoError(t, err)
	assert.Equal(t, 2, del.Items)
	assert.Equal(t, []string{rec("ann@example.com", other)}, assignmentRecords(t, env, st))
}

func ptr[T any](v T) *T { return &v }
