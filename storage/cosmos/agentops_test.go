package cosmos_test

import (
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/azcosmos"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	gtc "github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/storage/cosmos/cosmostest"
	"github.com/gtc-dev/gtc/storage/storetest/testenv"
)

// The audit log's layout in its container: one header document with
// id = operationId, and the items in pages of at most 500 entries, page p at id
// "<operationId>:items:<p>", all in the operation's partition. Other tools and later
// versions read these documents, so the layout is checked as it is stored.
func TestAgentOpDocuments(t *testing.T) {
	env := testenv.Cosmos(t)
	st, _ := cosmostest.Open(t, env, nil)
	ctx := t.Context()
	id := "op_01JDQ7Z3M8X9K2T5V6W7Y8A9BC"
	started := time.Date(2025, 3, 14, 9, 26, 53, 589793000, time.UTC)
	require.NoError(t, st.AgentOperations().Create(ctx, &gtc.AgentOperation{
		OperationID: id, Kind: gtc.AgentKindMergeTags, Actor: "alice@contoso.com", Via: "http",
		Args: json.RawMessage(`{"operation":"merge_tags"}`), Tags: []string{"topic:a"},
		StartedAt: started, Status: gtc.AgentOpRunning,
	}))
	items := make([]gtc.AgentOpItem, 1203)
	for i := range items {
		items[i] = gtc.AgentOpItem{DatasetName: "ds", Bucket: "b", ID: fmt.Sprint("item-", i), Result: gtc.AgentItemPending}
	}
	require.NoError(t, st.AgentOperations().PutItems(ctx, id, 0, items))

	ctr := cosmostest.Container(t, env, st, st.Containers().AgentOperations)
	pager := ctr.NewQueryItemsPager("SELECT * FROM c", azcosmos.NewPartitionKey(), nil)
	var docs []string
	for pager.More() {
		page, err := pager.NextPage(ctx)
		require.NoError(t, err)
		for _, raw := range page.Items {
			var d struct {
				ID, DocType, OperationID, StartedAt, Status string
				Page                                        int
				Items                                       []gtc.AgentOpItem
			}
			require.NoError(t, json.Unmarshal(raw, &d))
			assert.Equal(t, id, d.OperationID, "%s: partition key", d.ID)
			switch d.DocType {
			case "agent-operation":
				assert.Equal(t, "2025-03-14T09:26:53.589793Z", d.StartedAt, "stored time format: sortable text")
				assert.Equal(t, gtc.AgentOpRunning, d.Status)
				docs = append(docs, d.ID)
			case "agent-operation-items":
				assert.LessOrEqual(t, len(d.Items), 500, "%s", d.ID)
				require.NotEmpty(t, d.Items, "%s", d.ID)
				assert.Equal(t, fmt.Sprint("item-", 500*d.Page), d.Items[0].ID, "page %d starts at position %d", d.Page, 500*d.Page)
				docs = append(docs, fmt.Sprintf("%s (%d)", d.ID, len(d.Items)))
			default:
				t.Errorf("unexpected document %s of type %q", d.ID, d.DocType)
			}
		}
	}
	sort.Strings(docs)
	assert.Equal(t, []string{id, id + ":items:0 (500)", id + ":items:1 (500)", id + ":items:2 (203)"}, docs)
}
