package realserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"petstore/testkit/otlptest"
)

// TestTracesFollowACreate runs the binary with OTEL_EXPORTER_OTLP_ENDPOINT
// naming a real OTLP/HTTP receiver, sends a create with an Idempotency-Key
// and a proxy's traceparent, and a getPet without one. The create's span is
// the traceparent's child, named by its route, with the key's lookup, the
// rate limit, the idempotency store and the group commit as its children;
// the getPet is a trace of its own with SQLite's read in it; the access
// log's lines name their traces.
func TestTracesFollowACreate(t *testing.T) {
	receiver := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.Endpoint)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	t.Setenv("OTEL_SERVICE_NAME", "petstore-test")
	dir := t.TempDir()
	key, _ := createKey(t, dir, "--plan", "free")
	p := start(t, dir, "--log-format", "json", "--access-log")
	ctx := context.Background()

	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	resp, body, err := p.Exchange(ctx, http.MethodPost, "/v1/pets", key, []byte(`{"name":"Rex","categoryId":1}`),
		"Content-Type", "application/json", "Idempotency-Key", "trace-create-1", "traceparent", "00-"+traceID+"-"+parentID+"-01")
	if err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("create: %v %v %s", resp, err, body)
	}
	var pet struct{ ID int64 }
	if err := json.Unmarshal(body, &pet); err != nil {
		t.Fatal(err)
	}
	wanted := []string{"POST /v1/pets", "apikeys.find", "ratelimit.take", "idempotency.do", "pets.group_commit"}
	spans := receiver.WaitFor(t, 30*time.Second, func(spans []otlptest.Span) bool {
		return hasAll(spans, traceID, wanted...)
	})
	var trace []otlptest.Span
	for _, s := range spans {
		if s.TraceID == traceID {
			trace = append(trace, s)
		}
	}
	server := otlptest.Find(trace, "POST /v1/pets")
	if server.ParentID != parentID || server.Kind != "SPAN_KIND_SERVER" || server.Service != "petstore-test" {
		t.Fatalf("the create's span: %+v; want the child of %s, a server span of petstore-test", server, parentID)
	}
	for attr, want := range map[string]string{"http.route": "/v1/pets", "http.request.method": "POST", "http.response.status_code": "201",
		"petstore.request_id": resp.Header.Get("Request-Id")} {
		if got := server.Attributes[attr]; got != want {
			t.Errorf("the create's span: %s = %q, want %q", attr, got, want)
		}
	}
	for _, name := range wanted[1:] {
		if s := otlptest.Find(trace, name); s.ParentID != server.SpanID || s.Failed {
			t.Errorf("%s: %+v; want a child of the create's span (%s) that did not fail", name, s, server.SpanID)
		}
	}
	if commit := otlptest.Find(trace, "pets.group_commit"); commit.Attributes["petstore.batch.creates"] != "1" {
		t.Errorf("the group commit's span: %v; want petstore.batch.creates 1", commit.Attributes)
	}

	resp, body, err = p.Exchange(ctx, http.MethodGet, "/v1/pets/"+strconv.FormatInt(pet.ID, 10), key, nil)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("getPet: %v %v %s", resp, err, body)
	}
	getID := resp.Header.Get("Request-Id")
	spans = receiver.WaitFor(t, 30*time.Second, func(spans []otlptest.Span) bool {
		s := findByRequest(spans, getID)
		return s != nil && hasAll(spans, s.TraceID, "sqlite.pets.get")
	})
	get := findByRequest(spans, getID)
	if get.Name != "GET /v1/pets/{petId}" || get.ParentID != "" || get.TraceID == traceID {
		t.Fatalf("getPet's span: %+v; want the root of a trace of its own, named by its route", get)
	}

	// The access log's line of each request names its trace.
	var lines int
	for _, line := range strings.Split(p.Output(), "\n") {
		var event struct{ Msg, RequestID, TraceID string }
		if json.Unmarshal([]byte(line), &event) != nil || event.Msg != "Request" {
			continue
		}
		lines++
		if event.TraceID == "" {
			t.Errorf("an access log line without its trace: %s", line)
		}
		if event.RequestID == getID && event.TraceID != get.TraceID {
			t.Errorf("getPet's log line names trace %s, its span is of %s", event.TraceID, get.TraceID)
		}
	}
	if lines < 2 {
		t.Fatalf("%d access log lines; want the create's and getPet's:\n%s", lines, p.Output())
	}
}

// TestWebhookDeliveryLinksToItsCreate: with tracing on, a webhook delivery
// is a client span of its own trace (the outbox delivers later, maybe on
// another instance) that links to the server span of the create whose
// commit wrote its event, and the receiver gets the delivery's traceparent.
func TestWebhookDeliveryLinksToItsCreate(t *testing.T) {
	collector := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.Endpoint)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	rcv := newReceiver(t, "127.0.0.1:0")
	s := newWebhookStore(t, "--webhooks-allow-private")
	_, rcv.secret = s.addEndpoint(t, rcv.url(), "pet.created")

	const traceID, parentID = "5bf92f3577b34da6a3ce929d0e0e4737", "10f067aa0ba902b8"
	_, header := s.createPet(t, "Traced Rex", "Idempotency-Key", "trace-hook-1", "traceparent", "00-"+traceID+"-"+parentID+"-01")
	d := rcv.waitFor(1, 30*time.Second)[0]
	spans := collector.WaitFor(t, 30*time.Second, func(spans []otlptest.Span) bool {
		return findByRequest(spans, header.Get("Request-Id")) != nil && otlptest.Find(spans, "webhook.deliver") != nil
	})
	create := findByRequest(spans, header.Get("Request-Id"))
	if create.TraceID != traceID {
		t.Fatalf("the create's span: %+v; want it in trace %s", create, traceID)
	}
	deliver := otlptest.Find(spans, "webhook.deliver")
	if deliver.Kind != "SPAN_KIND_CLIENT" || deliver.ParentID != "" || deliver.TraceID == traceID {
		t.Errorf("the delivery's span: %+v; want a client span, the root of a trace of its own", deliver)
	}
	if want := (otlptest.Link{TraceID: traceID, SpanID: create.SpanID}); len(deliver.Links) != 1 || deliver.Links[0] != want {
		t.Errorf("the delivery's links: %+v; want one, to the create's server span %+v", deliver.Links, want)
	}
	if got, want := d.header.Get("Traceparent"), "00-"+deliver.TraceID+"-"+deliver.SpanID+"-01"; got != want {
		t.Errorf("the receiver got traceparent %q, want the delivery's %q", got, want)
	}
}

// hasAll reports whether spans hold a span of each of names in the trace.
func hasAll(spans []otlptest.Span, traceID string, names ...string) bool {
	for _, name := range names {
		found := false
		for _, s := range spans {
			found = found || (s.TraceID == traceID && s.Name == name)
		}
		if !found {
			return false
		}
	}
	return true
}

// findByRequest is the server span of the request with id, or nil.
func findByRequest(spans []otlptest.Span, id string) *otlptest.Span {
	for i := range spans {
		if spans[i].Kind == "SPAN_KIND_SERVER" && spans[i].Attributes["petstore.request_id"] == id {
			return &spans[i]
		}
	}
	return nil
}
