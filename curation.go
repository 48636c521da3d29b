package gtc

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"
)

// CurationInstructions is the curation guide of one dataset.
type CurationInstructions struct {
	DatasetName  string
	Instructions string
	UpdatedAt    time.Time
	UpdatedBy    *string
	ETag         string
}

// Fixed parts of a curation-instructions document, kept from the reference layout so
// existing Cosmos data reads unchanged.
const (
	CurationDocType       = "curation-instructions"
	CurationBucket        = "00000000-0000-0000-0000-000000000000"
	CurationSchemaVersion = "v1"
)

// CurationDocID is the document id of a dataset's instructions.
func CurationDocID(datasetName string) string { return CurationDocType + "|" + datasetName }

type curationJSON struct {
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

func (c *CurationInstructions) encode(mode encodeMode) []byte {
	d := curationJSON{
		ID: CurationDocID(c.DatasetName), DatasetName: c.DatasetName, Bucket: CurationBucket,
		DocType: CurationDocType, SchemaVersion: CurationSchemaVersion, Instructions: c.Instructions,
		UpdatedBy: c.UpdatedBy,
	}
	if mode == wireMode {
		d.UpdatedAt = FormatAPITime(c.UpdatedAt)
		etag := c.ETag
		d.ETag = &etag
	} else {
		d.UpdatedAt = FormatStoredTime(c.UpdatedAt)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(d) // a struct of strings always encodes
	return bytes.TrimRight(buf.Bytes(), "\n")
}

// APIJSON is the document as the API returns it, with _etag and milliseconds.
func (c *CurationInstructions) APIJSON() []byte { return c.encode(wireMode) }

// CanonicalJSON is the stored document: no _etag, microseconds.
func (c *CurationInstructions) CanonicalJSON() []byte { return c.encode(storedMode) }

// DecodeStoredCuration reads a document written by CanonicalJSON; the store supplies the ETag.
func DecodeStoredCuration(doc []byte, etag string) (*CurationInstructions, error) {
	var d curationJSON
	if err := json.Unmarshal(doc, &d); err != nil {
		return nil, fmt.Errorf("curation document: %w", err)
	}
	t, err := time.Parse(time.RFC3339Nano, d.UpdatedAt)
	if err != nil {
		return nil, fmt.Errorf("curation document: updatedAt: %w", err)
	}
	return &CurationInstructions{DatasetName: d.DatasetName, Instructions: d.Instructions, UpdatedAt: t.UTC(),
		UpdatedBy: d.UpdatedBy, ETag: etag}, nil
}
