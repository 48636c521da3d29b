package gtc

import "time"

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
