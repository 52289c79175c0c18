package realtime_test

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
	"testing"
	"time"

	"petstore/internal/apikeys"
	"petstore/internal/options"
	"petstore/internal/pets"
	"petstore/internal/realtime"
	"petstore/testkit/apptest"
)

// topics is n subscriptions of length characters each (pad fills them),
// the first of them pets/*, the others pets that do not exist.
func topics(n, length int, pad string) []string {
	out := []string{"pets/*"}
	for i := 1; i < n; i++ {
		t := fmt.Sprintf("pets/%d?", i)
		out = append(out, t+strings.Repeat(pad, length-len(t)))
	}
	return out
}

// expectRefused checks that r is PocketBase's error with status, its
// message naming bound.
func expectRefused(t *testing.T, what string, r *apptest.Response, status int, bound string) {
	t.Helper()
	var e struct {
		Status  int    `json:"status"`
		Message string `json:"message"`
	}
	r.JSON(t, &e)
	if r.StatusCode != status || e.Status != status || !strings.Contains(e.Message, bound) {
		t.Errorf("%s: %d %s, want %d naming %q", what, r.StatusCode, r.Body, status, bound)
	}
}

// A guest subscribes to at most 50 topics of at most 500 characters (not
// bytes); one more topic, or one more character, is refused with 400 naming
// the bound, and the guest keeps the subscriptions it had. A superuser
// keeps PocketBase's own bounds, 1,000 topics of 2,500 characters.
func TestGuestSubscriptionsAreBoundedAtTheirEdge(t *testing.T) {
	s := apptest.Start(t, "")
	guest := s.ConnectRealtime(t)

	guest.Subscribe(t, "", topics(realtime.MaxTopics, realtime.MaxTopicLength, "é")...)
	guest.Subscribe(t, "", topics(realtime.MaxTopics, realtime.MaxTopicLength, "x")...)
	expectRefused(t, "one topic too many", guest.TrySubscribe(t, "", topics(realtime.MaxTopics+1, 10, "x")...),
		http.StatusBadRequest, "at most 50")
	long := topics(realtime.MaxTopics, realtime.MaxTopicLength, "x")
	long[len(long)-1] += "é"
	expectRefused(t, "one character too many", guest.TrySubscribe(t, "", long...), http.StatusBadRequest, "at most 500")

	client, err := s.App.SubscriptionsBroker().ClientById(guest.ID())
	if err != nil {
		t.Fatal(err)
	}
	if kept := client.Subscriptions(); len(kept) != realtime.MaxTopics || !client.HasSubscription("pets/*") {
		t.Errorf("after the refusals the guest subscribes to %d topics, want the %d it had", len(kept), realtime.MaxTopics)
	}

	staff := s.ConnectRealtime(t)
	token := s.StaffToken(t)
	staff.Subscribe(t, token, topics(1000, 2500, "x")...)
	expectRefused(t, "a superuser's topic too many", staff.TrySubscribe(t, token, topics(1001, 10, "x")...),
		http.StatusBadRequest, "")
}

// From one address, 64 streams are open at once and the 65th is refused
// with 429 naming the bound: 63 guests holding all a guest may subscribe
// to, and a superuser's, which still hears the creates. A stream closed
// frees its place; streams gone leave nothing in the index.
func TestRealtimeStreamsAreBoundedPerNetwork(t *testing.T) {
	s := apptest.Start(t, "")
	key := s.NewKey(t, apikeys.NewKey{})
	var open []*apptest.Realtime
	for range realtime.DefaultPerNetwork - 1 {
		c := s.ConnectRealtime(t)
		c.Subscribe(t, "", topics(realtime.MaxTopics, realtime.MaxTopicLength, "x")...)
		open = append(open, c)
	}
	staff := s.ConnectRealtime(t)
	staff.Subscribe(t, s.StaffToken(t), "pets/*")
	if c, r := s.OpenRealtime(t); c != nil {
		t.Fatalf("stream %d opened", realtime.DefaultPerNetwork+1)
	} else {
		expectRefused(t, "one stream too many", r, http.StatusTooManyRequests, "at most 64")
	}

	pet := s.CreatePet(t, key, map[string]any{"name": "Rex", "categoryId": 1})
	if m := staff.NextRecord(t, "pets/*"); m.Record["id"] != fmt.Sprint(pet.ID) {
		t.Errorf("the superuser heard %+v, want the pet %d", m, pet.ID)
	}

	open[0].Close()
	waitFor(t, "a stream in the closed one's place", func() bool {
		c, _ := s.OpenRealtime(t)
		if c != nil {
			c.Close()
		}
		return c != nil
	})
	staff.Close()
	for _, c := range open {
		c.Close()
	}
	collection, err := s.App.FindCachedCollectionByNameOrId(pets.Collection)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "every stream unregistered", func() bool { return s.App.SubscriptionsBroker().TotalClients() == 0 })
	if realtime.Subscribed(s.App, collection) {
		t.Error("streams gone, pets is still subscribed")
	}
}

// waitFor polls cond until it holds, or fails the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited 10 s for %s", what)
		}
	}
}

// Behind a proxy, streams are counted by the network of the address it
// forwards: an IPv4 /24, an IPv6 /48, as the connection bounds count.
func TestRealtimeStreamsAreCountedByNetwork(t *testing.T) {
	s := apptest.StartWith(t, apptest.Config{Server: options.Server{TrustedProxyHeaders: []string{"X-Forwarded-For"},
		ProxyAddresses: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}, MaxRealtimePerNetwork: 2}})
	for _, c := range []struct {
		from   string
		opened bool
	}{
		{"203.0.113.5", true}, {"203.0.113.77", true}, {"203.0.113.200", false}, {"198.51.100.1", true},
		{"2001:db8:1:2::1", true}, {"2001:db8:1:ffff::1", true}, {"2001:db8:1:3::9", false}, {"2001:db8:2::1", true},
	} {
		stream, r := s.OpenRealtime(t, "X-Forwarded-For", c.from)
		switch {
		case c.opened && stream == nil:
			t.Errorf("from %s: %d %s, want a stream", c.from, r.StatusCode, r.Body)
		case !c.opened && stream != nil:
			t.Errorf("from %s: a stream, want 429", c.from)
		case !c.opened:
			expectRefused(t, "from "+c.from, r, http.StatusTooManyRequests, "at most 2")
		default:
			stream.Subscribe(t, "", "pets/*")
		}
	}
}
