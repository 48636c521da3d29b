// Package aztrace traces the HTTP tries of the Azure SDK clients (storage/cosmos,
// storage/blob) and carries the caller's trace to Azure: a per-try azcore policy starts a
// client span "<service> <METHOD>" under the span of the request's context, puts the W3C
// traceparent and tracestate headers on the outgoing request, and reports every retry.
//
// It uses the global OpenTelemetry API only; with no SDK installed the spans are no-ops
// and the headers carry whatever remote parent the context has (none outside a traced
// request).
package aztrace

import (
	"net/http"
	"strconv"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// tracerName names the spans of this package. The tracer is looked up per try so that a
// provider installed after the client was built is the one used.
const tracerName = "github.com/gtc-dev/gtc/storage/internal/aztrace"

// Span attribute keys (OpenTelemetry HTTP client conventions, plus the try number).
const (
	attrMethod = attribute.Key("http.request.method")
	attrServer = attribute.Key("server.address")
	attrStatus = attribute.Key("http.response.status_code")
	attrTry    = attribute.Key("gtc.azure.try")
)

// ReasonTransport is the retry reason when the previous try got no HTTP answer (a
// connection error, a reset, a per-try timeout).
const ReasonTransport = "transport"

// Policy is the per-try policy. Put it in azcore.ClientOptions.PerRetryPolicies, after any
// policy that retries by calling Next again (storage/cosmos's unavailableRetry), so that
// every try passes through it.
type Policy struct {
	service string
	onRetry func(reason string)
}

var _ policy.Policy = (*Policy)(nil)

// New returns the policy of service ("cosmos" or "blob"). onRetry, when not nil, is called
// before every try of an operation after the first, with the reason of the retry: the HTTP
// status code of the previous try ("503", "429") or ReasonTransport. It must be safe for
// concurrent use.
func New(service string, onRetry func(reason string)) *Policy {
	return &Policy{service: service, onRetry: onRetry}
}

// tries is the per-operation state, kept across the retries of one operation with
// policy.Request's operation values (every try is a clone that shares them).
type tries struct {
	n    int    // tries started, the current one included
	last string // the outcome of the previous try: its status code or ReasonTransport
}

// Do runs one try.
func (p *Policy) Do(req *policy.Request) (*http.Response, error) {
	var st tries
	req.OperationValue(&st)
	st.n++
	if st.n > 1 && p.onRetry != nil {
		p.onRetry(st.last)
	}
	req.SetOperationValue(st)

	raw := req.Raw()
	ctx, span := otel.Tracer(tracerName).Start(raw.Context(), p.service+" "+raw.Method, trace.WithSpanKind(trace.SpanKindClient))
	if span.IsRecording() {
		span.SetAttributes(attrMethod.String(raw.Method), attrServer.String(raw.URL.Hostname()), attrTry.Int(st.n))
	}
	// The headers carry this try's span (or, with no SDK, the caller's remote parent).
	otel.GetTextMapPropagator().Inject(ctx, propagation.HeaderCarrier(raw.Header))

	resp, err := req.Next()

	switch {
	case err != nil:
		st.last = ReasonTransport
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	case resp != nil:
		st.last = strconv.Itoa(resp.StatusCode)
		if span.IsRecording() {
			span.SetAttributes(attrStatus.Int(resp.StatusCode))
		}
		if resp.StatusCode >= 500 {
			span.SetStatus(codes.Error, http.StatusText(resp.StatusCode))
		}
	}
	req.SetOperationValue(st)
	span.End()
	return resp, err
}
