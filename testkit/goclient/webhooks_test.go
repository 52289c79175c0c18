package goclient_test

import (
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	"petstore/client"
	"petstore/internal/webhooks"
)

// What the service signs, the client verifies: a delivery signed by
// internal/webhooks with the secret, or with either secret of a roll; and
// the client's event types are the service's.
func TestTheClientVerifiesWhatTheServiceSigns(t *testing.T) {
	oldSecret, err := webhooks.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	newSecret, err := webhooks.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"type":"category.renamed","timestamp":"2026-12-07T12:00:00Z","data":{"id":3,"name":"Cats","previousName":"Kats"}}`)
	now := time.Now().Unix()
	sig, err := webhooks.Sign("msg_abc", now, body, oldSecret, newSecret)
	if err != nil {
		t.Fatal(err)
	}
	header := http.Header{"Webhook-Id": {"msg_abc"}, "Webhook-Timestamp": {strconv.FormatInt(now, 10)}, "Webhook-Signature": {sig}}
	for _, secret := range []string{oldSecret, newSecret} {
		v, err := client.NewWebhookVerifier(secret)
		if err != nil {
			t.Fatal(err)
		}
		e, err := v.Verify(header, body)
		var data client.CategoryRename
		if err != nil || e.Type != client.EventCategoryRenamed || e.ID != "msg_abc" || e.DecodeData(&data) != nil || data.PreviousName != "Kats" {
			t.Fatalf("Verify: %+v %+v, %v", e, data, err)
		}
	}
	other, _ := webhooks.NewSecret()
	v, _ := client.NewWebhookVerifier(other)
	if _, err := v.Verify(header, body); err == nil {
		t.Error("a delivery signed with other secrets verified")
	}

	var service []string
	for _, ty := range append(slices.Clone(webhooks.Types), webhooks.TestEvent) {
		service = append(service, string(ty))
	}
	clients := []string{}
	for _, ty := range []client.EventType{client.EventPetCreated, client.EventKeyCreated, client.EventKeyRolled, client.EventKeyRevoked,
		client.EventKeyBanned, client.EventKeyDayQuotaReached, client.EventUsageThreshold, client.EventPlanChanged, client.EventCategoryCreated,
		client.EventCategoryRenamed, client.EventCategoryDeleted, client.EventWebhookTest} {
		clients = append(clients, string(ty))
	}
	slices.Sort(service)
	slices.Sort(clients)
	if !slices.Equal(service, clients) {
		t.Errorf("the client's event types %v, the service's %v", clients, service)
	}
}
