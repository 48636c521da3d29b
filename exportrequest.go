package gtc

// ExportRequest is the decoded body of POST /v1/ground-truths/snapshot. Nil pointers mean
// "not sent": the export package applies the defaults and the semantic checks.
type ExportRequest struct {
	Format       *string   // nil → json_snapshot_payload
	Status       *string   // nil → approved; "" → every status
	DatasetNames *[]string // nil → every dataset; sent lists are echoed as sent, even []
	Processors   *[]string // nil → the configured default chain; [] → none
	Mode         string    // "attachment" (default), "stream" or "artifact"
}

// Export delivery modes.
const (
	DeliveryAttachment = "attachment"
	DeliveryStream     = "stream"
	DeliveryArtifact   = "artifact"
)

// DecodeExportRequest checks the schema of an export request: exact-case keys, no unknown
// key at any level, the JSON types of every value, a non-null status and a known delivery
// mode. Every problem is reported in one 422. An empty body, {} and null mean every default.
func DecodeExportRequest(body []byte) (*ExportRequest, error) {
	req := &ExportRequest{Mode: DeliveryAttachment}
	if body == nil {
		return req, nil
	}
	v, err := ParseBody(body)
	if err != nil {
		return nil, err
	}
	if v.kind == jNull {
		return req, nil
	}
	d := &decoder{}
	if !d.object(v, fieldPath{}, keys("format", "filters", "processors", "delivery")) {
		return nil, d.err()
	}
	if fv, ok := v.get("format"); ok && fv.kind != jNull {
		if s, ok := d.str(fv, at("format"), false); ok {
			req.Format = &s
		}
	}
	if fv, ok := v.get("filters"); ok && fv.kind != jNull {
		fp := at("filters")
		if d.object(fv, fp, keys("datasetNames", "status")) {
			if dv, ok := fv.get("datasetNames"); ok && dv.kind != jNull {
				if names, ok := d.stringList(dv, fp.key("datasetNames")); ok {
					req.DatasetNames = &names
				}
			}
			if sv, ok := fv.get("status"); ok {
				if s, ok := d.str(sv, fp.key("status"), false); ok {
					req.Status = &s
				}
			}
		}
	}
	if pv, ok := v.get("processors"); ok && pv.kind != jNull {
		if names, ok := d.stringList(pv, at("processors")); ok {
			req.Processors = &names
		}
	}
	if dv, ok := v.get("delivery"); ok && dv.kind != jNull {
		dp := at("delivery")
		if d.object(dv, dp, keys("mode")) {
			if mv, ok := dv.get("mode"); ok && mv.kind != jNull {
				if s, ok := d.str(mv, dp.key("mode"), false); ok {
					switch s {
					case DeliveryAttachment, DeliveryStream, DeliveryArtifact:
						req.Mode = s
					default:
						d.add(dp.key("mode"), "must be one of: attachment, stream, artifact")
					}
				}
			}
		}
	}
	if err := d.err(); err != nil {
		return nil, err
	}
	return req, nil
}
