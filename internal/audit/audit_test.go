package audit_test

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"petstore/internal/audit"
	"petstore/testkit/apptest"
)

// Details longer than their field's 4096 bytes are recorded, not refused:
// each long string value is cut to the length that fits and says how much
// it lost; every member stays, short values whole. "&", "<" and ">" are
// one byte each, not an escape of six. Details that fit are kept whole.
func TestWriteBoundsTheDetails(t *testing.T) {
	s := apptest.Start(t, "")
	long := "http://example.com/?" + strings.Repeat("&", 3000) + "é"
	details := map[string]any{
		"url":         map[string]any{"old": long, "new": long + "x"},
		"description": map[string]any{"old": strings.Repeat("<", 200), "new": "short"},
		"events":      []string{"pet.created"},
		"paused":      true,
	}
	if err := audit.Write(s.App, audit.Entry{Action: audit.WebhookChanged, Webhook: "w1", By: audit.CLI, Details: details}); err != nil {
		t.Fatalf("write: %v", err)
	}
	small := map[string]any{"url": map[string]any{"old": "http://a.test/?a&b<c>", "new": "http://b.test/"}}
	if err := audit.Write(s.App, audit.Entry{Action: audit.WebhookChanged, Webhook: "w2", By: audit.CLI, Details: small}); err != nil {
		t.Fatalf("write: %v", err)
	}
	read := func(webhook string) string {
		var raw string
		if err := s.App.DB().NewQuery("SELECT details FROM audit_log WHERE webhook = {:w}").Bind(map[string]any{"w": webhook}).Row(&raw); err != nil {
			t.Fatal(err)
		}
		return raw
	}
	raw := read("w1")
	var got struct {
		URL         struct{ Old, New string }
		Description struct{ Old, New string }
		Events      []string
		Paused      bool
	}
	if err := json.Unmarshal([]byte(raw), &got); err != nil {
		t.Fatalf("details %s: %v", raw, err)
	}
	if len(raw) > 4096 || len(raw) < 3900 {
		t.Errorf("details are %d bytes, want at most 4096 and little less", len(raw))
	}
	for _, v := range []string{got.URL.Old, got.URL.New} {
		if !strings.HasPrefix(v, "http://example.com/?&&&") || !strings.HasSuffix(v, " bytes cut]") || !utf8.ValidString(v) {
			t.Errorf("a cut value %.40q…%q", v, v[max(0, len(v)-30):])
		}
	}
	if got.Description.Old != strings.Repeat("<", 200) || got.Description.New != "short" || len(got.Events) != 1 || !got.Paused {
		t.Errorf("the short values changed: %+v", got)
	}
	if raw := read("w2"); raw != `{"url":{"new":"http://b.test/","old":"http://a.test/?a&b<c>"}}` {
		t.Errorf("small details %s, want them whole and unescaped", raw)
	}
}

// A URL in the details loses its user info, query and fragment on the
// console; other strings stay as they are.
func TestForLogHidesURLSecrets(t *testing.T) {
	got := audit.ForLog([]byte(`{"url":{"old":"https://u:p@hooks.example.org/in?token=s3cret#x","new":"https://hooks.example.org/in"},"name":"a?b=c","events":["pet.created"]}`))
	for _, secret := range []string{"s3cret", "u:p@", "#x"} {
		if strings.Contains(got, secret) {
			t.Errorf("ForLog kept %q: %s", secret, got)
		}
	}
	for _, kept := range []string{`"old":"https://hooks.example.org/in?…"`, `"new":"https://hooks.example.org/in"`, `"name":"a?b=c"`, `"pet.created"`} {
		if !strings.Contains(got, kept) {
			t.Errorf("ForLog lost %s: %s", kept, got)
		}
	}
}
