package codec

import (
	"fmt"
	"time"

	"github.com/go-json-experiment/json"
	"github.com/go-json-experiment/json/jsontext"

	"github.com/gtc-dev/gtc"
)

// curationDoc is the document of a dataset's curation instructions. Its fixed parts keep the
// reference layout so existing Cosmos data reads unchanged.
type curationDoc struct {
	ID            string  `json:"id"`
	DatasetName   string  `json:"datasetName"`
	Bucket        string  `json:"bucket"`
	DocType       string  `json:"docType"`
	SchemaVersion string  `json:"schemaVersion"`
	Instructions  string  `json:"instructions"`
	UpdatedAt     string  `json:"updatedAt"`
	UpdatedBy     *string `json:"updatedBy"`
	ETag          *string `json:"_etag,omitempty"`
}

func curationJSON(c *gtc.CurationInstructions, fm form) []byte {
	d := curationDoc{
		ID: gtc.CurationDocID(c.DatasetName), DatasetName: c.DatasetName, Bucket: gtc.CurationBucket,
		DocType: gtc.CurationDocType, SchemaVersion: gtc.CurationSchemaVersion, Instructions: c.Instructions,
		UpdatedBy: c.UpdatedBy,
	}
	if fm == formAPI {
		d.UpdatedAt = gtc.FormatAPITime(c.UpdatedAt)
		etag := c.ETag
		d.ETag = &etag
	} else {
		d.UpdatedAt = gtc.FormatStoredTime(c.UpdatedAt)
	}
	b, err := json.Marshal(d, jsontext.AllowInvalidUTF8(true))
	if err != nil {
		panic(err) // a struct of strings always encodes
	}
	return b
}

// CurationAPIJSON is the curation document as the API returns it, with _etag and milliseconds.
func CurationAPIJSON(c *gtc.CurationInstructions) []byte { return curationJSON(c, formAPI) }

// CurationStoredJSON is the stored curation document: no _etag, microseconds.
func CurationStoredJSON(c *gtc.CurationInstructions) []byte { return curationJSON(c, formStored) }

// DecodeStoredCuration reads a document written by CurationStoredJSON; the store supplies the
// ETag.
func DecodeStoredCuration(doc []byte, etag string) (*gtc.CurationInstructions, error) {
	var d curationDoc
	if err := json.Unmarshal(doc, &d, storedOptions); err != nil {
		return nil, fmt.Errorf("curation document: %w", err)
	}
	t, err := time.Parse(time.RFC3339Nano, d.UpdatedAt)
	if err != nil {
		return nil, fmt.Errorf("curation document: updatedAt: %w", err)
	}
	return &gtc.CurationInstructions{DatasetName: d.DatasetName, Instructions: d.Instructions, UpdatedAt: t.UTC(),
		UpdatedBy: d.UpdatedBy, ETag: etag}, nil
}
