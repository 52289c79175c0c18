package client

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"net/http"
	"testing"
	"time"
)

// Standard Webhooks' own example delivery (the specification's test
// vector) verifies; changed in any part, or late, it does not.
func TestWebhookVerifierChecksStandardWebhooksSignatures(t *testing.T) {
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	body := []byte(`{"type":"webhook.test","timestamp":"2021-02-25T15:02:10Z","data":{"endpoint":"e1"}}`)
	header := func(id, ts, sig string) http.Header {
		return http.Header{"Webhook-Id": {id}, "Webhook-Timestamp": {ts}, "Webhook-Signature": {sig}}
	}
	v, err := NewWebhookVerifier("whsec_c2VjcmV0", secret)
	if err != nil {
		t.Fatal(err)
	}
	v.now = func() time.Time { return time.Unix(1614265330, 0).Add(time.Minute) }
	// The vector: id msg_p5jXN8AQM9LWM0D4loKWxJek, timestamp 1614265330,
	// body {"test": 2432232314}.
	if !v.signed("msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330", []byte(`{"test": 2432232314}`), "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=") {
		t.Fatal("the specification's example signature does not verify")
	}
	sig := "v1,bm90IGl0 " + sign(v.keys[1], "msg_1", "1614265330", body)
	e, err := v.Verify(header("msg_1", "1614265330", sig), body)
	var data WebhookTest
	if err != nil || e.ID != "msg_1" || e.Type != EventWebhookTest || e.DecodeData(&data) != nil || data.Endpoint != "e1" {
		t.Fatalf("Verify: %+v, %v", e, err)
	}
	for name, h := range map[string]http.Header{
		"another id":        header("msg_2", "1614265330", sig),
		"another timestamp": header("msg_1", "1614265331", sig),
		"no signature":      header("msg_1", "1614265330", ""),
		"a v2 signature":    header("msg_1", "1614265330", "v2,"+sig[len("v1,bm90IGl0 v1,"):]),
	} {
		var we *WebhookError
		if _, err := v.Verify(h, body); !errors.As(err, &we) {
			t.Errorf("%s: %v, want a *WebhookError", name, err)
		}
	}
	v.now = func() time.Time { return time.Unix(1614265330, 0).Add(6 * time.Minute) }
	if _, err := v.Verify(header("msg_1", "1614265330", sig), body); err == nil {
		t.Error("a delivery 6 minutes old verified")
	}
	if _, err := NewWebhookVerifier("whsec_!!"); err == nil {
		t.Error("a secret that is not base64 was taken")
	}
}

// sign is a Standard Webhooks signature, made as the specification says.
func sign(key []byte, id, ts string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + ts + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}
