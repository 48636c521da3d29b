package export

import (
	"context"
	"errors"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// Observer is told of every finished export: once per Stream, Attachment or Artifact call,
// with the plan's mode and format, the outcome ("ok", "failed" or "cancelled", as in the
// summary log line), the records and body bytes written and how long it took. cmd/gtc
// counts exports with it; it must be safe for concurrent use and return quickly.
type Observer interface {
	ExportDone(mode, format, outcome string, items int, bytes int64, d time.Duration)
}

// Export outcomes, as logged and as given to the Observer.
const (
	OutcomeOK        = "ok"
	OutcomeFailed    = "failed"
	OutcomeCancelled = "cancelled"
)

// outcomeOf classifies the error an export ended with.
func outcomeOf(err error) string {
	switch {
	case err == nil:
		return OutcomeOK
	case errors.Is(err, context.Canceled):
		return OutcomeCancelled
	}
	return OutcomeFailed
}

// tracerName names the spans of this package. The tracer is looked up per span so that a
// provider installed after New (or swapped by a test) is the one used; with no SDK every
// span is a no-op that costs a context and no attributes.
const tracerName = "github.com/gtc-dev/gtc/export"

// Span names of an export (issue10-design.md, "Export stages").
const (
	spanStream     = "export.stream"
	spanAttachment = "export.attachment"
	spanArtifact   = "export.artifact"
	spanRead       = "export.read"
	spanBuild      = "export.build"
	spanWrite      = "export.write"
	spanReserve    = "export.reserve"
	spanWriteData  = "export.write_data"
	spanWriteItems = "export.write_items"
	spanManifest   = "export.manifest"
)

// Span attribute keys.
const (
	attrMode       = attribute.Key("gtc.export.mode")
	attrFormat     = attribute.Key("gtc.export.format")
	attrItems      = attribute.Key("gtc.export.items")
	attrBytes      = attribute.Key("gtc.export.bytes")
	attrRequestID  = attribute.Key("gtc.request_id")
	attrSnapshotID = attribute.Key("gtc.export.snapshot_id")
	attrOutcome    = attribute.Key("gtc.export.outcome")
)

// startSpan starts a span of this package under ctx's span.
func startSpan(ctx context.Context, name string) (context.Context, trace.Span) {
	return otel.Tracer(tracerName).Start(ctx, name)
}

// endSpan ends a stage span with its item count (none when items < 0) and, when the stage
// itself failed, an error status. A stage stopped because the export was cancelled keeps an
// unset status: it did not fail.
func endSpan(span trace.Span, items int, err error) {
	if span.IsRecording() {
		if items >= 0 {
			span.SetAttributes(attrItems.Int(items))
		}
		if err != nil && !errors.Is(err, context.Canceled) {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
		}
	}
	span.End()
}

// operation is one Stream, Attachment or Artifact call in progress: its span and start.
type operation struct {
	x    *Exporter
	plan *Plan
	span trace.Span
	t0   time.Time
}

// startOperation starts the span of one export call; the returned context carries it, so
// the stage spans and the store calls nest under it.
func (x *Exporter) startOperation(ctx context.Context, name string, plan *Plan) (context.Context, *operation) {
	ctx, span := startSpan(ctx, name)
	if span.IsRecording() {
		span.SetAttributes(attrMode.String(plan.Mode), attrFormat.String(plan.Formatter.Name()))
		if plan.RequestID != "" { // "" outside HTTP (gtc export)
			span.SetAttributes(attrRequestID.String(plan.RequestID))
		}
	}
	return ctx, &operation{x: x, plan: plan, span: span, t0: time.Now()}
}

// done ends the call: the summary log line, the span (counts, snapshot id, error status on
// failure) and the Observer, each exactly once.
func (op *operation) done(res Result, err error) {
	d := time.Since(op.t0)
	outcome := outcomeOf(err)
	op.x.logDone(op.plan, res, err, outcome, d)
	if s := op.span; s.IsRecording() {
		s.SetAttributes(attrItems.Int(res.Count), attrBytes.Int64(res.Bytes), attrOutcome.String(outcome))
		if res.SnapshotID != "" {
			s.SetAttributes(attrSnapshotID.String(res.SnapshotID))
		}
		if outcome == OutcomeFailed {
			s.RecordError(err)
			s.SetStatus(codes.Error, err.Error())
		}
	}
	op.span.End()
	if op.x.observer != nil {
		op.x.observer.ExportDone(op.plan.Mode, op.plan.Formatter.Name(), outcome, res.Count, res.Bytes, d)
	}
}
