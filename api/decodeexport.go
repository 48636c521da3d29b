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
	v, err := codec.ParseBody(body)
	if err != nil || v.Kind() == codec.Null {
		return req, err
	}
	d, m := &codec.Decoder{}, map[string]codec.Value{}
	if !d.Object(v, codec.Path{}, codec.Keys("format", "filters", "processors", "delivery"), m) {
		return nil, d.Err()
	}
	if s, ok := d.Str(m["format"], codec.At("format"), true); ok {
		req.Format = &s
	}
	fp, filters := codec.At("filters"), map[string]codec.Value{}
	if m["filters"].Kind() != codec.Null && d.Object(m["filters"], fp, codec.Keys("datasetNames", "status"), filters) {
		if names := d.Strings(filters["datasetNames"], fp.Key("datasetNames"), false, false); names != nil {
			req.DatasetNames = &names
		}
		if sv, ok := filters["status"]; ok {
			if s, ok := d.Str(sv, fp.Key("status"), false); ok {
				req.Status = &s
			}
		}
	}
	if names := d.Strings(m["processors"], codec.At("processors"), false, false); names != nil {
		req.Processors = &names
	}
	dp, delivery := codec.At("delivery"), map[string]codec.Value{}
	if m["delivery"].Kind() != codec.Null && d.Object(m["delivery"], dp, codec.Keys("mode"), delivery) {
		if s, ok := d.Str(delivery["mode"], dp.Key("mode"), true); ok {
			if req.Mode = s; !slices.Contains([]string{gtc.DeliveryAttachment, gtc.DeliveryStream, gtc.DeliveryArtifact}, s) {
				d.Add(dp.Key("mode"), "must be one of: attachment, stream, artifact")
			}
		}
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	return req, nil
}
