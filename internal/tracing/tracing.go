// Package tracing sets up OpenTelemetry's tracing from the standard OTEL_*
// variables and hands out the spans the service's parts start where their
// work is. It is off unless the variables name an OTLP endpoint: then no
// provider exists, Start returns its context unchanged, and a request pays
// one pointer check per would-be span.
package tracing

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.43.0"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"
)

// Protocols of OTEL_EXPORTER_OTLP_PROTOCOL (and its _TRACES_ form).
const (
	ProtocolHTTP = "http/protobuf"
	ProtocolGRPC = "grpc"
)

// Config is what the OTEL_* variables ask for. Its zero value is tracing off.
type Config struct {
	// Protocol is ProtocolHTTP or ProtocolGRPC; empty: tracing is off.
	Protocol string
	// ServiceName names the service in every span's resource
	// (OTEL_SERVICE_NAME; petstore).
	ServiceName string
}

// Enabled reports whether spans are exported.
func (c Config) Enabled() bool { return c.Protocol != "" }

// ConfigFromEnv reads the variables that decide whether and how spans are
// exported: tracing is on when OTEL_EXPORTER_OTLP_ENDPOINT or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set, or OTEL_TRACES_EXPORTER is
// otlp; off when OTEL_SDK_DISABLED is true or OTEL_TRACES_EXPORTER is none.
// The exporter and the SDK read the other OTEL_* variables themselves
// (headers, timeouts, the sampler, the batch's sizes, the resource's
// attributes).
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	if strings.EqualFold(getenv("OTEL_SDK_DISABLED"), "true") {
		return Config{}, nil
	}
	switch exporter := strings.ToLower(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER"))); exporter {
	case "none":
		return Config{}, nil
	case "", "otlp":
		if exporter == "" && getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "" {
			return Config{}, nil
		}
	default:
		return Config{}, fmt.Errorf("invalid OTEL_TRACES_EXPORTER %q: otlp or none", exporter)
	}
	protocol := getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
	if protocol == "" {
		protocol = getenv("OTEL_EXPORTER_OTLP_PROTOCOL")
	}
	switch protocol {
	case "", ProtocolHTTP:
		protocol = ProtocolHTTP
	case ProtocolGRPC:
	default:
		return Config{}, fmt.Errorf("invalid OTEL_EXPORTER_OTLP_PROTOCOL %q: http/protobuf or grpc", protocol)
	}
	name := getenv("OTEL_SERVICE_NAME")
	if name == "" {
		name = "petstore"
	}
	return Config{Protocol: protocol, ServiceName: name}, nil
}

// current holds the process's tracer while tracing is on; nil off. Every
// part's spans come from it, through the functions below.
var current atomic.Pointer[tracerOf]

type tracerOf struct{ trace.Tracer }

func tracer() trace.Tracer {
	if t := current.Load(); t != nil {
		return t.Tracer
	}
	return nil
}

// Tracing is the running exporter; Close flushes the spans it holds.
type Tracing struct {
	provider *sdktrace.TracerProvider
}

// Begin starts exporting as cfg says, with version as the service's
// version, and installs the W3C trace context as the propagator that
// Extract and Inject use. With cfg off it does nothing and returns a
// Tracing whose Close does nothing.
func Begin(ctx context.Context, cfg Config, version string) (*Tracing, error) {
	if !cfg.Enabled() {
		return &Tracing{}, nil
	}
	var client otlptrace.Client
	if cfg.Protocol == ProtocolGRPC {
		client = otlptracegrpc.NewClient()
	} else {
		client = otlptracehttp.NewClient()
	}
	exporter, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("OpenTelemetry: the OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx, resource.WithFromEnv(), resource.WithTelemetrySDK(), resource.WithHost(),
		resource.WithAttributes(semconv.ServiceName(cfg.ServiceName), semconv.ServiceVersion(version)))
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		return nil, fmt.Errorf("OpenTelemetry: the resource: %w", err)
	}
	provider := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exporter), sdktrace.WithResource(res))
	otel.SetTracerProvider(provider)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	current.Store(&tracerOf{provider.Tracer("petstore")})
	return &Tracing{provider: provider}, nil
}

// Close exports the spans still held, within 5 seconds, and stops.
func (t *Tracing) Close() error {
	if t.provider == nil {
		return nil
	}
	current.Store(nil)
	otel.SetTracerProvider(noop.NewTracerProvider())
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return t.provider.Shutdown(ctx)
}

// On reports whether spans are made.
func On() bool { return current.Load() != nil }

// Start starts a span named name as a child of ctx's, and returns the
// context that carries it. Without a span in ctx (tracing off, or work no
// request began) it returns ctx and a span that records nothing.
//
// Its callers set attributes only when the span IsRecording: a request
// with tracing off builds none.
func Start(ctx context.Context, name string) (context.Context, trace.Span) {
	parent := trace.SpanFromContext(ctx)
	t := tracer()
	if t == nil || !parent.IsRecording() {
		return ctx, parent
	}
	return t.Start(ctx, name)
}

// StartRoot starts a span of its own trace, linked to the span that
// linkTo, a W3C traceparent (Traceparent's), names when it names one: a
// webhook delivery, linked to the create that made its event.
func StartRoot(ctx context.Context, name string, kind trace.SpanKind, linkTo string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	t := tracer()
	if t == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	opts := []trace.SpanStartOption{trace.WithNewRoot(), trace.WithSpanKind(kind), trace.WithAttributes(attrs...)}
	if linkTo != "" {
		linked := propagation.TraceContext{}.Extract(context.Background(), propagation.MapCarrier{"traceparent": linkTo})
		if sc := trace.SpanContextFromContext(linked); sc.IsValid() {
			opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
		}
	}
	return t.Start(ctx, name, opts...)
}

// Traceparent is ctx's span as a W3C traceparent, to keep with work that
// goes on later in another trace (a webhook event, whose deliveries link
// to it), or "" without a span. With tracing off it reads nothing.
func Traceparent(ctx context.Context) string {
	if !On() || !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	carrier := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, carrier)
	return carrier["traceparent"]
}

// StartServer starts a request's span, the child of the trace context the
// request carries (traceparent, from a proxy or a follower) when any.
func StartServer(ctx context.Context, header propagation.TextMapCarrier, name string, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	t := tracer()
	if t == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	ctx = propagation.TraceContext{}.Extract(ctx, header)
	return t.Start(ctx, name, trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attrs...))
}

// Inject writes ctx's trace context into header (traceparent), for a
// request this process sends on (a follower's forward).
func Inject(ctx context.Context, header propagation.TextMapCarrier) {
	if On() {
		propagation.TraceContext{}.Inject(ctx, header)
	}
}

// ID is the trace id of ctx's span, or "" without one. With tracing off it
// reads nothing: every request's metrics and log lines ask.
func ID(ctx context.Context) string {
	if !On() {
		return ""
	}
	sc := trace.SpanContextFromContext(ctx)
	if !sc.HasTraceID() {
		return ""
	}
	return sc.TraceID().String()
}

// Fail marks span as failed by err, when err is not nil.
func Fail(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, "")
	}
}

// End ends span, marking it failed by *err unless that is nil or one of
// expected (an answer that something does not exist is not a failure).
func End(span trace.Span, err *error, expected ...error) {
	if *err != nil && span.IsRecording() {
		for _, e := range expected {
			if errors.Is(*err, e) {
				span.End()
				return
			}
		}
		Fail(span, *err)
	}
	span.End()
}

// The attributes of the pets writer's spans.
func BatchSize(n int) attribute.KeyValue { return attribute.Int("petstore.batch.creates", n) }

func CommitMillis(d time.Duration) attribute.KeyValue {
	return attribute.Float64("petstore.commit.ms", float64(d.Microseconds())/1000)
}

// Store is the rate limiter's store that counted: memory, redis, or local
// while Redis is down.
func Store(name string) attribute.KeyValue { return attribute.String("petstore.ratelimit.store", name) }
