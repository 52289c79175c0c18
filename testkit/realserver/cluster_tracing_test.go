package realserver_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"petstore/testkit/etcdtest"
	"petstore/testkit/otlptest"
)

// TestTracesFollowAForwardedCreate runs a leader and a follower that send
// their spans to a real OTLP/HTTP receiver, and sends a create with a
// proxy's traceparent to the follower. One trace holds it all: the
// follower's forward, the traceparent's child; the leader's request, the
// forward's child; the leader's work, the request's children.
func TestTracesFollowAForwardedCreate(t *testing.T) {
	etcdtest.Require(t)
	receiver := otlptest.Start(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.Endpoint)
	t.Setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
	c := startCluster(t, 2)
	key := startLeaderAndFollowers(t, c)
	follower := c.nodes[1]

	const traceID, parentID = "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
	req, err := http.NewRequest(http.MethodPost, follower.url()+"/v1/pets", strings.NewReader(`{"name":"Rex","categoryId":1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", "traced-forward-1")
	req.Header.Set("traceparent", "00-"+traceID+"-"+parentID+"-01")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("the create through the follower: %d", resp.StatusCode)
	}
	wanted := []string{"cluster.forward", "POST /v1/pets", "apikeys.find", "ratelimit.take", "idempotency.do", "pets.group_commit", "cluster.acknowledge"}
	spans := receiver.WaitFor(t, 30*time.Second, func(spans []otlptest.Span) bool { return hasAll(spans, traceID, wanted...) })
	var trace []otlptest.Span
	for _, s := range spans {
		if s.TraceID == traceID {
			trace = append(trace, s)
		}
	}
	forward := otlptest.Find(trace, "cluster.forward")
	if forward.ParentID != parentID || forward.Kind != "SPAN_KIND_SERVER" || forward.Attributes["petstore.leader"] != c.nodes[0].name ||
		forward.Attributes["http.response.status_code"] != "201" {
		t.Fatalf("the follower's forward: %+v; want a server span, the traceparent's child, naming the leader and its 201", forward)
	}
	server := otlptest.Find(trace, "POST /v1/pets")
	if server.ParentID != forward.SpanID {
		t.Fatalf("the leader's request: %+v; want the forward's child (%s)", server, forward.SpanID)
	}
	for _, name := range wanted[2:] {
		if s := otlptest.Find(trace, name); s.ParentID != server.SpanID {
			t.Errorf("%s: %+v; want it under the leader's request (%s)", name, s, server.SpanID)
		}
	}
}
