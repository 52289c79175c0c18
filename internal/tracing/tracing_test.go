package tracing_test

import (
	"context"
	"testing"

	"petstore/internal/tracing"
)

// TestConfigFromEnv holds the variables to what OpenTelemetry's SDKs do,
// but off unless an endpoint or the exporter is named.
func TestConfigFromEnv(t *testing.T) {
	for _, tc := range []struct {
		name    string
		env     map[string]string
		want    tracing.Config
		wantErr bool
	}{
		{"nothing set", nil, tracing.Config{}, false},
		{"an endpoint", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"},
			tracing.Config{Protocol: tracing.ProtocolHTTP, ServiceName: "petstore"}, false},
		{"the traces' endpoint, over gRPC, named", map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://collector:4317",
			"OTEL_EXPORTER_OTLP_PROTOCOL": "grpc", "OTEL_SERVICE_NAME": "shop"}, tracing.Config{Protocol: tracing.ProtocolGRPC, ServiceName: "shop"}, false},
		{"the traces' protocol wins", map[string]string{"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
			"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf"}, tracing.Config{Protocol: tracing.ProtocolHTTP, ServiceName: "petstore"}, false},
		{"the exporter none", map[string]string{"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, tracing.Config{}, false},
		{"the SDK disabled", map[string]string{"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318"}, tracing.Config{}, false},
		{"an exporter not built in", map[string]string{"OTEL_TRACES_EXPORTER": "zipkin"}, tracing.Config{}, true},
		{"a protocol not built in", map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://collector:4318", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json"}, tracing.Config{}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := tracing.ConfigFromEnv(func(k string) string { return tc.env[k] })
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ConfigFromEnv = %+v, %v; want %+v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestOffCostsNothing: with tracing off, a would-be span is the context's
// own (no span), and starting one, or asking for the traceparent a create
// keeps for its webhook event, allocates nothing.
func TestOffCostsNothing(t *testing.T) {
	ctx := context.Background()
	if tracing.On() {
		t.Fatal("tracing is on before Begin")
	}
	allocs := testing.AllocsPerRun(100, func() {
		c, span := tracing.Start(ctx, "work")
		var err error
		tracing.End(span, &err)
		if c != ctx {
			t.Fatal("Start made a context with tracing off")
		}
		if tp := tracing.Traceparent(c); tp != "" {
			t.Fatalf("Traceparent with tracing off = %q", tp)
		}
	})
	if allocs != 0 {
		t.Fatalf("a span with tracing off allocates %v times", allocs)
	}
	if id := tracing.ID(ctx); id != "" {
		t.Fatalf("ID without a span = %q", id)
	}
}
