package export

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gtc-dev/gtc"
)

// DefaultFormat is the format of a request that names none.
const DefaultFormat = "json_snapshot_payload"

// SchemaVersion is the schemaVersion of payloads and manifests.
const SchemaVersion = "v2"

// Plan is a resolved, immutable export request: nothing has been read or written yet.
type Plan struct {
	Formatter    Formatter
	Processors   []Processor
	Statuses     []gtc.Status   // empty = every status
	DatasetNames []string       // sorted, unique; empty = every dataset
	FiltersEcho  map[string]any // {"status": as sent or "approved", "datasetNames": as sent, only if sent}
	Mode         string         // gtc.DeliveryAttachment, gtc.DeliveryStream or gtc.DeliveryArtifact
	// Select, when set, keeps only the items it returns true for (a release's tag filters).
	Select    func(*gtc.Item) bool
	Actor     string // the caller's user id
	RequestID string // for the summary log line; "" outside HTTP
}

// ProcessorNames lists the chain's names in order.
func (p *Plan) ProcessorNames() []string {
	out := make([]string, len(p.Processors))
	for i, pr := range p.Processors {
		out[i] = pr.Name()
	}
	return out
}

// extraColumns are the csv columns the chain adds.
func (p *Plan) extraColumns() []string {
	if p.splitsTurns() {
		return splitTurnsColumns
	}
	return nil
}

// extraTypedColumns are the parquet columns the chain adds.
func (p *Plan) extraTypedColumns() []Column {
	if p.splitsTurns() {
		return splitTurnsTypedColumns
	}
	return nil
}

func (p *Plan) splitsTurns() bool {
	for _, pr := range p.Processors {
		if pr.Name() == (SplitTurns{}).Name() {
			return true
		}
	}
	return false
}

// GetRequest is what GET /v1/ground-truths/snapshot means: approved items, the default
// format and chain, delivered as an attachment.
func GetRequest() *gtc.ExportRequest {
	f, st := DefaultFormat, string(gtc.StatusApproved)
	return &gtc.ExportRequest{Format: &f, Status: &st, Mode: gtc.DeliveryAttachment}
}

// Resolve turns a decoded request into a plan. Every semantic problem is collected into one
// 400 whose code and detail are those of the first (format, processors, status, dataset
// names, in that order); the entries for unknown names also list the known ones.
func (x *Exporter) Resolve(req *gtc.ExportRequest, actor string) (*Plan, error) {
	type problem struct {
		code, detail string
		fe           gtc.FieldError
	}
	var probs []problem
	add := func(code, detail, field, msg string) {
		probs = append(probs, problem{code, detail, gtc.FieldError{Field: field, Message: msg}})
	}
	plan := &Plan{Actor: actor, Mode: req.Mode}
	if plan.Mode == "" {
		plan.Mode = gtc.DeliveryAttachment
	}

	format := DefaultFormat
	if req.Format != nil {
		format = *req.Format
	}
	if f, ok := x.formatters.Lookup(format); ok {
		plan.Formatter = f
	} else {
		d := fmt.Sprintf("Unknown export format '%s'", format)
		add(gtc.CodeUnknownFormat, d, "format", d+" (known: "+strings.Join(x.formatters.Names(), ", ")+")")
	}

	names := x.defaultChain
	if req.Processors != nil {
		names = *req.Processors
	}
	chain, err := x.processors.Resolve(names)
	if errs, ok := err.(NameErrors); ok {
		for _, e := range errs {
			field := fmt.Sprintf("processors[%d]", e.Index)
			if e.Duplicate {
				d := e.Error()
				add(gtc.CodeDuplicateProcessor, d, field, d)
			} else {
				add(gtc.CodeUnknownProcessor, fmt.Sprintf("Unknown export processor '%s'", e.Name), field, e.Error())
			}
		}
	}
	plan.Processors = chain

	status := string(gtc.StatusApproved)
	if req.Status != nil {
		status = *req.Status
	}
	if status != "" {
		st := gtc.Status(status)
		if st.Valid() {
			plan.Statuses = []gtc.Status{st}
		} else {
			d := fmt.Sprintf("Invalid status value '%s'", status)
			add(gtc.CodeInvalidStatus, d, "filters.status", d)
		}
	}
	plan.FiltersEcho = map[string]any{"status": status}

	if req.DatasetNames != nil {
		echo := make([]any, len(*req.DatasetNames))
		for i, n := range *req.DatasetNames {
			echo[i] = n
			if strings.TrimSpace(n) == "" {
				d := "datasetNames entries must not be blank"
				add(gtc.CodeInvalidField, d, fmt.Sprintf("filters.datasetNames[%d]", i), d)
				continue
			}
			plan.DatasetNames = append(plan.DatasetNames, n)
		}
		slices.Sort(plan.DatasetNames)
		plan.DatasetNames = slices.Compact(plan.DatasetNames)
		plan.FiltersEcho["datasetNames"] = echo
	}

	if len(probs) > 0 {
		fields := make([]gtc.FieldError, len(probs))
		for i, p := range probs {
			fields[i] = p.fe
		}
		return nil, &gtc.Error{Code: probs[0].code, Message: probs[0].detail, Fields: fields}
	}
	return plan, nil
}
