// Package otlptest is an OTLP/HTTP trace receiver for tests: it listens on a
// free loopback port, decodes what OpenTelemetry's exporters send (protobuf,
// gzipped or not) and keeps the spans, which tests then read as a tree.
package otlptest

import (
	"compress/gzip"
	"encoding/hex"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// Span is one span received, its ids in hex.
type Span struct {
	Service    string // the resource's service.name
	TraceID    string
	SpanID     string
	ParentID   string // "" for a root
	Name       string
	Kind       string // SPAN_KIND_SERVER, SPAN_KIND_INTERNAL...
	Attributes map[string]string
	Links      []Link // the spans it links to
	Failed     bool   // the span's status is an error
}

// Link is a span a Span links to.
type Link struct{ TraceID, SpanID string }

// Receiver keeps the spans sent to Endpoint.
type Receiver struct {
	// Endpoint is the value of OTEL_EXPORTER_OTLP_ENDPOINT that sends
	// spans here: http://127.0.0.1:PORT.
	Endpoint string

	mu    sync.Mutex
	spans []Span
}

// Start starts a receiver, which stops when t ends.
func Start(t testing.TB) *Receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &Receiver{Endpoint: "http://" + ln.Addr().String()}
	srv := &http.Server{Handler: http.HandlerFunc(r.export), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	t.Cleanup(func() { _ = srv.Close() })
	return r
}

func (r *Receiver) export(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost || req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		gz, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = gz
	}
	data, err := io.ReadAll(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var export collectortrace.ExportTraceServiceRequest
	if err := proto.Unmarshal(data, &export); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	var spans []Span
	for _, rs := range export.ResourceSpans {
		service := attributes(rs.GetResource().GetAttributes())["service.name"]
		for _, ss := range rs.ScopeSpans {
			for _, s := range ss.Spans {
				span := Span{
					Service: service, TraceID: hex.EncodeToString(s.TraceId), SpanID: hex.EncodeToString(s.SpanId),
					ParentID: hex.EncodeToString(s.ParentSpanId), Name: s.Name, Kind: s.Kind.String(),
					Attributes: attributes(s.Attributes), Failed: s.GetStatus().GetCode() == tracepb.Status_STATUS_CODE_ERROR,
				}
				for _, l := range s.Links {
					span.Links = append(span.Links, Link{TraceID: hex.EncodeToString(l.TraceId), SpanID: hex.EncodeToString(l.SpanId)})
				}
				spans = append(spans, span)
			}
		}
	}
	r.mu.Lock()
	r.spans = append(r.spans, spans...)
	r.mu.Unlock()
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func attributes(kvs []*commonpb.KeyValue) map[string]string {
	m := make(map[string]string, len(kvs))
	for _, kv := range kvs {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = strconv.FormatInt(v.IntValue, 10)
		case *commonpb.AnyValue_DoubleValue:
			m[kv.Key] = strconv.FormatFloat(v.DoubleValue, 'g', -1, 64)
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = strconv.FormatBool(v.BoolValue)
		default:
			m[kv.Key] = kv.GetValue().String()
		}
	}
	return m
}

// Spans are the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Trace are the spans received of the trace with id.
func (r *Receiver) Trace(id string) []Span {
	var out []Span
	for _, s := range r.Spans() {
		if s.TraceID == id {
			out = append(out, s)
		}
	}
	return out
}

// WaitFor returns the spans received once done says they are all that is
// awaited, failing t after timeout.
func (r *Receiver) WaitFor(t testing.TB, timeout time.Duration, done func([]Span) bool) []Span {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		spans := r.Spans()
		if done(spans) {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("the spans awaited did not arrive within %s; received: %+v", timeout, spans)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Find is the first span of spans named name, or nil.
func Find(spans []Span, name string) *Span {
	for i := range spans {
		if spans[i].Name == name {
			return &spans[i]
		}
	}
	return nil
}
