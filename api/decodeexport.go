package api

import (
	"slices"

	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// decodeExportRequest checks the schema of an export request: exact-case keys, no unknown
// key at any level, the JSON types of every value, a non-null status and a known delivery
// mode. Every problem is reported in one 422. An empty body, {} and null mean every default;
// a null member is an absent one, except the status.
func decodeExportRequest(body []byte) (*gtc.ExportRequest, error) {
	req := &gtc.ExportRequest{Mode: gtc.DeliveryAttachment}
	if body == nil {
		return req, nil
	}
	d, v := codec.Parse(body)
	m, filters, delivery := map[string]codec.Value{}, map[string]codec.Value{}, map[string]codec.Value{}
	if v.Kind() == codec.Null || !d.Object(v, codec.Path{}, codec.Keys("format", "filters", "processors", "delivery"), m) {
		return codec.Result(d, req)
	}
	if s, ok := d.Str(m["format"], codec.At("format"), true); ok {
		req.Format = &s
	}
	fp, dp := codec.At("filters"), codec.At("delivery")
	if m["filters"].Kind() != codec.Null && d.Object(m["filters"], fp, codec.Keys("datasetNames", "status"), filters) {
		if names := d.Strings(filters["datasetNames"], fp.Key("datasetNames"), false, false); names != nil {
			req.DatasetNames = &names
		}
		_, set := filters["status"] // a status that is set must not be null
		if s, ok := d.Str(filters["status"], fp.Key("status"), !set); ok {
			req.Status = &s
		}
	}
	if names := d.Strings(m["processors"], codec.At("processors"), false, false); names != nil {
		req.Processors = &names
	}
	if m["delivery"].Kind() != codec.Null && d.Object(m["delivery"], dp, codec.Keys("mode"), delivery) {
		if s, ok := d.Str(delivery["mode"], dp.Key("mode"), true); ok {
			if req.Mode = s; !slices.Contains([]string{gtc.DeliveryAttachment, gtc.DeliveryStream, gtc.DeliveryArtifact}, s) {
				d.Add(dp.Key("mode"), "must be one of: attachment, stream, artifact")
			}
		}
	}
	return codec.Result(d, req)
}
