package cosmos_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/cosmos/cosmostest"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

// metaDocs returns the raw documents of kind in the meta container, by partition key and id.
func metaDocs(t *testing.T, ctx context.Context, ctr *azcosmos.ContainerClient, kind string) map[string][]byte {
	t.Helper()
	q := "SELECT * FROM c WHERE c.kind = @kind"
	pager := ctr.NewQueryItemsPager(q, azcosmos.NewPartitionKey(), &azcosmos.QueryOptions{
		QueryParameters: []azcosmos.QueryParameter{{Name: "@kind", Value: kind}}})
	out := map[string][]byte{}
	for pager.More() {
		page, err := pager.NextPage(ctx)
		require.NoError(t, err)
		for _, raw := range page.Items {
			var d struct{ PK, ID string }
			require.NoError(t, json.Unmarshal(raw, &d))
			out[d.PK+"/"+d.ID] = raw
		}
	}
	return out
}

// The previews' layout in the meta container: headers in one partition under ASCII ids
// whatever the caller's characters, and plans in chunk documents of at most about 512 KB
// in each preview's partition. The chunks of a replaced preview are deleted; a header whose
// chunks are gone reads as no preview; chunks a failed delete left behind go once expired.
func TestAgentPreviewDocuments(t *testing.T) {
	env := testenv.Cosmos(t)
	if cosmostest.Gaps(env).MissingReadIsServerError {
		t.Skip("skipped: @vercel/cosmosdb-server 1.0.1 answers 500 for a point read of a missing item; run with the fixed launcher")
	}
	st, _ := cosmostest.Open(t, env, nil)
	ctx := t.Context()
	ps := st.AgentPreviews()
	ctr := cosmostest.Container(t, env, st, st.Containers().Meta)
	at := time.Date(2025, 3, 14, 9, 26, 53, 589793000, time.UTC)
	preview := func(id, caller string, plan []byte) gtc.AgentPreview {
		return gtc.AgentPreview{ID: id, Caller: caller, Hash: "h", CreatedAt: at, ExpiresAt: at.Add(15 * time.Minute),
			State: gtc.AgentPreviewOpen, Changes: 1, Plan: plan}
	}
	b := gtc.AgentPreviewBounds{PerUser: 16, Total: 256, TotalChanges: 200000}

	caller := "Zoë 😀"
	plan := []byte(strings.Repeat("x", 1_000_000))
	_, err := ps.Put(ctx, preview("pv_1", caller, plan), b)
	require.NoError(t, err)
	headers := metaDocs(t, ctx, ctr, "agent-preview")
	sum := sha256.Sum256([]byte(caller + "\x00h"))
	require.Contains(t, headers, "agent-previews/"+hex.EncodeToString(sum[:]), "the header's id is ASCII: %v", headers)
	chunks := metaDocs(t, ctx, ctr, "agent-preview-chunk")
	assert.Len(t, chunks, 3, "1 MB of plan in chunks of at most 384 KiB")
	for key, raw := range chunks {
		assert.True(t, strings.HasPrefix(key, "agent-preview:pv_1/"), key)
		assert.LessOrEqual(t, len(raw), 530_000, "%s: about 512 KB at most", key)
	}

	_, err = ps.Put(ctx, preview("pv_2", caller, []byte("second")), b)
	require.NoError(t, err)
	chunks = metaDocs(t, ctx, ctr, "agent-preview-chunk")
	assert.Equal(t, []string{"agent-preview:pv_2/0"}, keysOf(chunks), "the replaced preview's chunks are deleted")

	_, err = ctr.DeleteItem(ctx, azcosmos.NewPartitionKeyString("agent-preview:pv_2"), "0", nil)
	require.NoError(t, err)
	_, err = ps.Get(ctx, caller, "h")
	assert.ErrorIs(t, err, gtc.ErrNotFound, "a header whose chunks are gone")

	// A header deleted behind the store's back leaves its chunks: they go once expired.
	_, err = ps.Put(ctx, preview("pv_3", "bob", []byte("bob's")), b)
	require.NoError(t, err)
	sum = sha256.Sum256([]byte("bob\x00h"))
	_, err = ctr.DeleteItem(ctx, azcosmos.NewPartitionKeyString("agent-previews"), hex.EncodeToString(sum[:]), nil)
	require.NoError(t, err)
	n, err := ps.DeleteExpired(ctx, at.Add(time.Minute))
	require.NoError(t, err)
	assert.Zero(t, n)
	assert.Equal(t, []string{"agent-preview:pv_3/0"}, keysOf(metaDocs(t, ctx, ctr, "agent-preview-chunk")), "not expired yet")
	n, err = ps.DeleteExpired(ctx, at.Add(time.Hour))
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the header of pv_2")
	assert.Empty(t, metaDocs(t, ctx, ctr, "agent-preview-chunk"))
	assert.Empty(t, metaDocs(t, ctx, ctr, "agent-preview"))
}

func keysOf(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
