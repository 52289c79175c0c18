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
	header []string   // set on the stream's request and the subscriptions'
	Events chan Event // closed when the stream ends
	close  func()
}

// ConnectRealtime opens a realtime stream, closed at the test's end or by
// Close.
func (s *Server) ConnectRealtime(t *testing.T) *Realtime {
	t.Helper()
	c, r := s.OpenRealtime(t)
	if c == nil {
		t.Fatalf("GET /api/realtime: %d %s", r.StatusCode, r.Body)
	}
	return c
}

// OpenRealtime is ConnectRealtime with header's fields (name, value, ...)
// on the stream's request and on the client's subscriptions; an answer
// that is not a stream is returned instead.
func (s *Server) OpenRealtime(t *testing.T, header ...string) (*Realtime, *Response) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"/api/realtime", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /api/realtime: %v", err)
	}
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		defer cancel()
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return nil, &Response{Response: resp, Body: body}
	}
	c := &Realtime{s: s, header: header, Events: make(chan Event, 64)}
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
	return c, nil
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
	if r := c.TrySubscribe(t, token, topics...); r.StatusCode != http.StatusNoContent {
		t.Fatalf("POST /api/realtime: %d %s", r.StatusCode, r.Body)
	}
}

// TrySubscribe is Subscribe that returns the answer.
func (c *Realtime) TrySubscribe(t *testing.T, token string, topics ...string) *Response {
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
	for i := 0; i+1 < len(c.header); i += 2 {
		req.Header.Set(c.header[i], c.header[i+1])
	}
	return c.s.Send(t, req)
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
