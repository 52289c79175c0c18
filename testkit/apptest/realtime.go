package apptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Event is one event of PocketBase's realtime stream.
type Event struct {
	Name string
	Data []byte
}

// Realtime is a connection to /api/realtime, as the JS SDK makes it:
// GET /api/realtime, read PB_CONNECT's clientId, then POST the
// subscriptions with the client's credential.
type Realtime struct {
	id     string
	s      *Server
	Events chan Event // closed when the stream ends
	close  func()
}

// ConnectRealtime opens a realtime stream, closed at the test's end or by
// Close.
func (s *Server) ConnectRealtime(t *testing.T) *Realtime {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api/realtime", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /api/realtime: %v", err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("GET /api/realtime: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	c := &Realtime{s: s, Events: make(chan Event, 64)}
	var once sync.Once
	c.close = func() { once.Do(func() { cancel(); resp.Body.Close() }) }
	t.Cleanup(c.close)
	go readSSE(resp.Body, c.Events)

	connect := c.Next(t)
	var hello struct {
		ClientID string `json:"clientId"`
	}
	if err := json.Unmarshal(connect.Data, &hello); connect.Name != "PB_CONNECT" || err != nil || hello.ClientID == "" {
		t.Fatalf("first realtime event %q %s, want PB_CONNECT with a clientId", connect.Name, connect.Data)
	}
	c.id = hello.ClientID
	return c
}

// ID is the client's id, which a subscription request names.
func (c *Realtime) ID() string { return c.id }

// Close ends the stream.
func (c *Realtime) Close() { c.close() }

// readSSE sends the stream's events to events, and closes it at the end.
func readSSE(body io.Reader, events chan<- Event) {
	defer close(events)
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	var ev Event
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if ev.Name != "" {
				events <- ev
			}
			ev = Event{}
		case strings.HasPrefix(line, "event:"):
			ev.Name = strings.TrimPrefix(line, "event:")
		case strings.HasPrefix(line, "data:"):
			ev.Data = append(ev.Data, strings.TrimPrefix(line, "data:")...)
		}
	}
}

// Subscribe replaces the client's subscriptions, with token's credential
// (none when empty).
func (c *Realtime) Subscribe(t *testing.T, token string, topics ...string) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"clientId": c.id, "subscriptions": topics})
	req, err := http.NewRequest(http.MethodPost, c.s.URL+"/api/realtime", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", token)
	}
	if r := c.s.Send(t, req); r.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /api/realtime: %d %s", r.StatusCode, r.Body)
	}
}

// Next is the client's next event.
func (c *Realtime) Next(t *testing.T) Event {
	t.Helper()
	select {
	case ev, ok := <-c.Events:
		if !ok {
			t.Fatal("the realtime stream ended")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no realtime event within 10 s")
	}
	return Event{}
}

// RecordMessage is the data of a record's realtime event.
type RecordMessage struct {
	Action string         `json:"action"`
	Record map[string]any `json:"record"`
}

// NextRecord is the client's next event, a record message on topic.
func (c *Realtime) NextRecord(t *testing.T, topic string) RecordMessage {
	t.Helper()
	ev := c.Next(t)
	var m RecordMessage
	if err := json.Unmarshal(ev.Data, &m); err != nil || ev.Name != topic {
		t.Fatalf("realtime event %q %s, want a record message on %q (%v)", ev.Name, ev.Data, topic, err)
	}
	return m
}
