package api

import (
	"github.com/gtc-dev/gtc"
	"github.com/gtc-dev/gtc/codec"
)

// decodeExportRequest checks the schema of an export request: exact-case keys, no unknown
// key at any level, the JSON types of every value, a non-null status and a known delivery
// mode. Every problem is reported in one 422. An empty body, {} and null mean every default.
func decodeExportRequest(body []byte) (*gtc.ExportRequest, error) {
	req := &gtc.ExportRequest{Mode: gtc.DeliveryAttachment}
	if body == nil {
		return req, nil
	}
	v, err := codec.ParseBody(body)
	if err != nil {
		return nil, err
	}
	if v.Kind() == codec.Null {
		return req, nil
	}
	d := &codec.Decoder{}
	if !d.Object(v, codec.Path{}, codec.Keys("format", "filters", "processors", "delivery")) {
		return nil, d.Err()
	}
	if fv, ok := v.Get("format"); ok && fv.Kind() != codec.Null {
		if s, ok := d.Str(fv, codec.At("format"), false); ok {
			req.Format = &s
		}
	}
	if fv, ok := v.Get("filters"); ok && fv.Kind() != codec.Null {
		fp := codec.At("filters")
		if d.Object(fv, fp, codec.Keys("datasetNames", "status")) {
			if dv, ok := fv.Get("datasetNames"); ok && dv.Kind() != codec.Null {
				if names, ok := d.StringList(dv, fp.Key("datasetNames")); ok {
					req.DatasetNames = &names
				}
			}
			if sv, ok := fv.Get("status"); ok {
				if s, ok := d.Str(sv, fp.Key("status"), false); ok {
					req.Status = &s
				}
			}
		}
	}
	if pv, ok := v.Get("processors"); ok && pv.Kind() != codec.Null {
		if names, ok := d.StringList(pv, codec.At("processors")); ok {
			req.Processors = &names
		}
	}
	if dv, ok := v.Get("delivery"); ok && dv.Kind() != codec.Null {
		dp := codec.At("delivery")
		if d.Object(dv, dp, codec.Keys("mode")) {
			if mv, ok := dv.Get("mode"); ok && mv.Kind() != codec.Null {
				if s, ok := d.Str(mv, dp.Key("mode"), false); ok {
					switch s {
					case gtc.DeliveryAttachment, gtc.DeliveryStream, gtc.DeliveryArtifact:
						req.Mode = s
					default:
						d.Add(dp.Key("mode"), "must be one of: attachment, stream, artifact")
					}
				}
			}
		}
	}
	if err := d.Err(); err != nil {
		return nil, err
	}
	return req, nil
}
