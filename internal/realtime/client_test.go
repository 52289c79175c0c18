package realtime

import (
	"maps"
	"testing"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/subscriptions"
	"github.com/pocketbase/pocketbase/tools/types"
)

var topics = []string{
	"pets/*", "pets", "pets/100000000000001", "pbc_pets/*", "pbc_pets", "petsitters/*", "pets/*/x",
	`pets/*?options={"query":{"filter":"status='sold'"}}`, "pets?options=%7B%7D", "pets/100000000000001?a=1",
	"pets/100000000000001?a=1?b", "?x", "", "pets/*?", "api_keys/*",
}

// The indexed client answers every prefix, PocketBase's broadcast's
// ("NAME?") and any other, with what PocketBase's own client answers, the
// options read alike.
func TestClientMatchesPocketBases(t *testing.T) {
	cs := &Clients{byNetwork: map[string]int{}, byCollection: map[indexKey]int{}}
	ours, theirs := cs.wrap(subscriptions.NewDefaultClient()), subscriptions.NewDefaultClient()
	ours.Subscribe(topics...)
	theirs.Subscribe(topics...)
	prefixes := []string{"pets/*?", "pets?", "pets/100000000000001?", "pbc_pets/*?", "pbc_pets?", "pets/", "pets",
		"pets/*?options", "?", "", "pets/100000000000001?a=1?", "api_keys/*?", "nothing?"}
	for _, p := range prefixes {
		if got, want := ours.Subscriptions(p), theirs.Subscriptions(p); !equal(got, want) {
			t.Errorf("Subscriptions(%q) = %v, PocketBase's %v", p, got, want)
		}
	}
	if got, want := ours.Subscriptions(prefixes...), theirs.Subscriptions(prefixes...); !equal(got, want) {
		t.Errorf("Subscriptions of every prefix = %v, PocketBase's %v", got, want)
	}
	if got, want := ours.Subscriptions(), theirs.Subscriptions(); !equal(got, want) {
		t.Errorf("Subscriptions() = %v, PocketBase's %v", got, want)
	}
	for _, topic := range append(topics, "pets/*?other") {
		if ours.HasSubscription(topic) != theirs.HasSubscription(topic) {
			t.Errorf("HasSubscription(%q) = %v", topic, ours.HasSubscription(topic))
		}
	}
	ours.Unsubscribe("pets/*", "pets/*?", "never")
	theirs.Unsubscribe("pets/*", "pets/*?", "never")
	if got, want := ours.Subscriptions(), theirs.Subscriptions(); !equal(got, want) {
		t.Errorf("after Unsubscribe: %v, PocketBase's %v", got, want)
	}
}

func equal(a, b map[string]subscriptions.SubscriptionOptions) bool {
	if len(a) != len(b) {
		return false
	}
	for topic, o := range a {
		p, ok := b[topic]
		if !ok || !maps.Equal(o.Query, p.Query) || !maps.Equal(o.Headers, p.Headers) {
			return false
		}
	}
	return true
}

// Subscribed follows the clients' subscriptions by collection, name or id,
// through Subscribe, Unsubscribe and Discard; a subscription after Discard
// counts nothing. A guest's subscriptions count only while the collection's
// list or view rule lets others than superusers read; a client that signs
// in as a superuser has its subscriptions counted as a superuser's. A
// client of another kind is asked itself.
func TestSubscribedFollowsTheClients(t *testing.T) {
	app := core.NewBaseApp(core.BaseAppConfig{})
	cs := Bind(app, 0)
	pets := core.NewBaseCollection("pets")
	pets.Id = "pbc_pets"
	superuser := core.NewRecord(core.NewAuthCollection(core.CollectionNameSuperusers))
	register := func(auth *core.Record) subscriptions.Client {
		c := cs.wrap(subscriptions.NewDefaultClient())
		c.Set(apis.RealtimeClientAuthKey, auth)
		app.SubscriptionsBroker().Register(c)
		return c
	}
	expect := func(what string, want bool) {
		t.Helper()
		if got := Subscribed(app, pets); got != want {
			t.Errorf("%s: Subscribed = %v, want %v", what, got, want)
		}
	}
	expect("no client", false)
	a, b := register(superuser), register(superuser)
	a.Subscribe("petsitters/*", "api_keys/*")
	expect("other collections", false)
	for _, topic := range []string{"pets/*", "pets", "pets/100000000000001?x=1", "pbc_pets/*", "pbc_pets?options={}"} {
		b.Subscribe(topic, topic) // twice: counted once
		expect(topic, true)
		b.Unsubscribe(topic)
		expect(topic+" unsubscribed", false)
	}
	b.Subscribe("pets/*", "pbc_pets")
	a.Subscribe("pets/*")
	b.Unsubscribe()
	expect("one client left", true)
	app.SubscriptionsBroker().Unregister(a.Id())
	expect("the last discarded", false)
	a.Subscribe("pets/*")
	expect("a subscription after Discard", false)

	guest := register(nil)
	guest.Subscribe("pets/*", "pets/100000000000001")
	expect("a guest, pets for superusers only", false)
	pets.ViewRule = types.Pointer("")
	expect("a guest, pets' records public", true)
	pets.ViewRule = nil
	guest.Set(apis.RealtimeClientAuthKey, superuser)
	guest.Subscribe("pets/*")
	expect("the guest signed in as a superuser", true)
	guest.Unsubscribe()
	expect("the superuser unsubscribed", false)
	if cs.live != 2 || len(cs.byCollection) != 0 {
		t.Errorf("live %d, index %v; want 2 clients and no subscription", cs.live, cs.byCollection)
	}

	foreign := subscriptions.NewDefaultClient()
	app.SubscriptionsBroker().Register(foreign)
	expect("a client of another kind without subscriptions", false)
	foreign.Subscribe("pets/*")
	expect("a client of another kind subscribed", true)
}
