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
