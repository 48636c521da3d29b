package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"

	"github.com/gtc-dev/gtc/cmd/internal/ledger"
	"github.com/gtc-dev/gtc/cmd/internal/loadkit"
)

// agentKeyword is what the agent's find_and_tag looks for; about a third of the library's
// conversations mention it.
const agentKeyword = "throughput"

var questions = []string{
	"How do I rotate the API keys without downtime?",
	"Which browsers does the admin console support?",
	"Where do I download the installer for the desktop client?",
	"Is customer data encrypted at rest and in transit?",
	"Why does the sync job stop after an hour?",
	"How many seats does the team licence include?",
}

var throughputQuestions = []string{
	"What throughput can one ingestion worker sustain?",
	"How do I raise the export throughput for large datasets?",
	"Does enabling audit logging lower the API throughput?",
}

var answers = []string{
	"Create a second key, roll it out to every client, then revoke the first.",
	"The current and previous major versions of Chrome, Edge, Firefox and Safari.",
	"From the downloads page of the admin console, under Clients.",
	"Yes: AES-256 at rest and TLS 1.2 or later in transit.",
	"The access token expires after an hour; enable refresh tokens in the connector settings.",
	"Each worker handles about 400 documents per second; add workers to scale out.",
}

// fixtureItem builds one item to import: a short conversation with a user and an agent
// turn (so it can be approved), a reference on every other item, one source tag.
func fixtureItem(r *rand.Rand, dataset, id string, library bool) map[string]any {
	q := questions[r.IntN(len(questions))]
	if library && r.IntN(3) == 0 {
		q = throughputQuestions[r.IntN(len(throughputQuestions))]
	}
	it := map[string]any{
		"id": id, "datasetName": dataset, "manualTags": []string{"source:synthetic"},
		"history":  []map[string]string{{"role": "user", "msg": q}, {"role": "assistant", "msg": answers[r.IntN(len(answers))]}},
		"metadata": map[string]any{"origin": "gtc-load"},
	}
	if r.IntN(2) == 0 {
		it["plugins"] = map[string]any{"rag-compat": map[string]any{"kind": "rag-compat", "data": map[string]any{
			"references": []map[string]any{{"url": fmt.Sprintf("https://docs.example.com/kb/%s", id), "title": "Knowledge base"}}}}}
	}
	return it
}

// importDataset imports n items into dataset in requests of 500 (approved with approve),
// checking that every one was created.
func importDataset(c *loadkit.Client, r *rand.Rand, dataset, idPrefix string, n int, approve bool) error {
	const batch = 500
	for first := 0; first < n; first += batch {
		items := make([]map[string]any, 0, batch)
		for i := first; i < min(n, first+batch); i++ {
			items = append(items, fixtureItem(r, dataset, fmt.Sprintf("%s-%06d", idPrefix, i), approve))
		}
		body, err := json.Marshal(items)
		if err != nil {
			return err
		}
		path := "/v1/ground-truths"
		if approve {
			path += "?approve=true"
		}
		res, data, err := c.Do(http.MethodPost, path, body, nil)
		if err != nil {
			return fmt.Errorf("import into %s: %w", dataset, err)
		}
		var out struct {
			Imported int               `json:"imported"`
			Errors   []json.RawMessage `json:"errors"`
		}
		if res.StatusCode != http.StatusOK || json.Unmarshal(data, &out) != nil {
			return fmt.Errorf("import into %s: %d %.300s", dataset, res.StatusCode, data)
		}
		if out.Imported != len(items) {
			return fmt.Errorf("import into %s: %d of %d items imported; first error %s", dataset, out.Imported, len(items), firstRaw(out.Errors))
		}
	}
	return nil
}

func firstRaw(v []json.RawMessage) string {
	if len(v) == 0 {
		return "none"
	}
	return string(v[0])
}

// listedItem is the part of a listed item the setup needs.
type listedItem struct {
	ID          string `json:"id"`
	DatasetName string `json:"datasetName"`
	Bucket      string `json:"bucket"`
	ETag        string `json:"_etag"`
}

// recordBases pages through dataset and records each item's ETag as its starting state;
// it returns the keys, and fails unless it found exactly want items.
func recordBases(c *loadkit.Client, led *ledger.Ledger, dataset string, want int) ([]ledger.Key, error) {
	var keys []ledger.Key
	for page := 1; ; page++ {
		q := url.Values{"dataset": {dataset}, "sortBy": {"id"}, "sortOrder": {"asc"}, "limit": {"100"}, "page": {strconv.Itoa(page)}}
		var p struct {
			Items []listedItem `json:"items"`
		}
		if err := c.GetJSON("/v1/ground-truths?"+q.Encode(), &p); err != nil {
			return nil, err
		}
		if len(p.Items) == 0 {
			break
		}
		for _, it := range p.Items {
			k := ledger.Key{Dataset: it.DatasetName, Bucket: it.Bucket, ID: it.ID}
			led.Base(k, normETag(it.ETag))
			keys = append(keys, k)
		}
	}
	if len(keys) != want {
		return nil, fmt.Errorf("listing %s found %d items, %d were imported", dataset, len(keys), want)
	}
	return keys, nil
}
