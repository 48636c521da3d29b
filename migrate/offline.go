package migrate

import (
	"errors"
	"maps"

	gtc "github.com/gtc-dev/gtc"
)

// newReport starts the report of doc.
func newReport(doc gtc.RawDoc) DocReport {
	return DocReport{Key: doc.KeyString(), DatasetName: doc.DatasetName(), Bucket: doc.BucketString(), ID: doc.ID}
}

// setError records a failed conversion.
func (d *DocReport) setError(err error) {
	var de *DocError
	if !errors.As(err, &de) {
		de = &DocError{Code: CodeInvalidDocument, Message: err.Error()}
	}
	d.Action, d.Error = ActionError, de
}

// apply records a conversion's outcome: the action, the changes, the warnings and the
// dry-run description.
func (d *DocReport) apply(res Result) {
	d.Changes, d.Warnings, d.Summary, d.ConvertedTags = res.Changes, res.Warnings, res.Summary, res.ConvertedTags
	if res.NewKey != nil {
		d.NewBucket = res.NewKey.Bucket
	}
	switch {
	case res.Kind == KindMigrate:
		d.Action = ActionMigrate
	case res.NewKey != nil:
		d.Action = ActionMove
	case res.Kind == KindReindex:
		d.Action = ActionReindex
	default:
		d.Action = ActionUnchanged
	}
}

// rawDocOf wraps a document read from a file, so that it is named like a stored one.
func rawDocOf(doc map[string]any) gtc.RawDoc {
	id, _ := doc["id"].(string)
	return gtc.RawDoc{PartitionKey: []any{doc["datasetName"], doc["bucket"]}, ID: id, Body: doc}
}

// ConvertForImport is the conversion of gtc migrate convert: the converted canonical document as
// an importable v2 record, with its bucket kept when the stored one was canonical and removed
// otherwise (gtc import then assigns one) and without computedTags (import recomputes them), and
// the document's report. A failed document has no record and an Error in the report.
func ConvertForImport(doc map[string]any, env Env) (map[string]any, DocReport) {
	rep := newReport(rawDocOf(doc))
	res, err := Convert(doc, env)
	if err != nil {
		rep.setError(err)
		return nil, rep
	}
	rep.apply(res)
	rec := maps.Clone(res.Body)
	if res.NewKey != nil {
		delete(rec, "bucket")
	}
	// Import recomputes the computed tags and reports a sent computedTags as an ignored
	// output-only field; leaving it out keeps the import of a conversion free of warnings.
	delete(rec, "computedTags")
	return rec, rep
}
