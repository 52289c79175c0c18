// Package realtime bounds PocketBase's realtime clients (/api/realtime), so
// that guests cannot take the process's memory, or slow every write, with
// them: the streams of one network are bounded, as the connections are, and
// a client that is not a superuser subscribes to a bounded number of topics
// of a bounded length. Each client's subscriptions are indexed by topic
// name, and all clients' by collection, so that a record's event costs a
// client one look-up and tells in one look-up whether anybody listens,
// instead of scanning every topic of every client.
package realtime

import (
	"fmt"
	"net/netip"
	"sync"
	"unicode/utf8"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
	"github.com/pocketbase/pocketbase/tools/subscriptions"

	"petstore/internal/clientnet"
)

// The bounds of a client that is not a superuser. A page subscribes to a
// few collections and records; the JS SDK writes a subscription's options
// (a filter, expand, fields) into its topic, URL-encoded, which makes a
// filter of about 250 characters a topic of 500. Superusers keep
// PocketBase's own bounds, 1,000 topics of 2,500 characters.
const (
	MaxTopics      = 50
	MaxTopicLength = 500 // characters
)

// DefaultPerNetwork is how many realtime streams the clients of one network
// (an IPv4 /24, an IPv6 /48: clientnet.Wide, as the connection bounds
// count) may hold open together: a browser tab holds one.
const DefaultPerNetwork = 64

// storeKey holds the app's Clients in its store, where Subscribed finds
// them.
const storeKey = "petstore.realtimeClients"

// Clients counts an app's realtime clients by network and their
// subscriptions by collection.
type Clients struct {
	perNetwork int

	mu           sync.Mutex
	byNetwork    map[string]int
	byCollection map[indexKey]int // subscriptions
	live         int              // clients of this package's kind, not yet discarded
}

// indexKey is what the index counts subscriptions by: the collection a
// topic names (its name or id), and whether its client subscribed as a
// superuser.
type indexKey struct {
	collection string
	superuser  bool
}

// Bind bounds app's realtime clients: perNetwork streams per network (0:
// DefaultPerNetwork), refused with 429, and the subscriptions of a client
// that is not a superuser, refused with 400; and replaces PocketBase's
// client by the indexed one.
func Bind(app core.App, perNetwork int) *Clients {
	if perNetwork <= 0 {
		perNetwork = DefaultPerNetwork
	}
	cs := &Clients{perNetwork: perNetwork, byNetwork: map[string]int{}, byCollection: map[indexKey]int{}}
	app.Store().Set(storeKey, cs)
	app.OnRealtimeConnectRequest().Bind(&hook.Handler[*core.RealtimeConnectRequestEvent]{
		Id: "petstoreRealtimeClients",
		Func: func(e *core.RealtimeConnectRequestEvent) error {
			network := networkOf(e.RealIP())
			if !cs.admit(network) {
				return e.TooManyRequestsError(fmt.Sprintf(
					"Too many realtime connections from your network: at most %d are open at once; close one and try again.", cs.perNetwork), nil)
			}
			defer cs.release(network)
			if d, ok := e.Client.(*subscriptions.DefaultClient); ok {
				c := cs.wrap(d)
				e.Client = c
				// Uncounts the client whether or not PocketBase registered it.
				defer c.Discard()
			}
			return e.Next()
		},
	})
	app.OnRealtimeSubscribeRequest().Bind(&hook.Handler[*core.RealtimeSubscribeRequestEvent]{
		Id: "petstoreRealtimeTopics",
		Func: func(e *core.RealtimeSubscribeRequestEvent) error {
			if e.HasSuperuserAuth() {
				return e.Next()
			}
			if msg := checkTopics(e.Subscriptions); msg != "" {
				return e.BadRequestError(msg, nil)
			}
			return e.Next()
		},
	})
	return cs
}

// checkTopics says which bound topics break, if any.
func checkTopics(topics []string) string {
	if len(topics) > MaxTopics {
		return fmt.Sprintf("Too many subscriptions: %d topics, and a client that is not a superuser subscribes to at most %d.",
			len(topics), MaxTopics)
	}
	for i, topic := range topics {
		if n := utf8.RuneCountInString(topic); n > MaxTopicLength {
			return fmt.Sprintf("Subscription %d is too long: %d characters, and a client that is not a superuser subscribes to topics of at most %d.",
				i+1, n, MaxTopicLength)
		}
	}
	return ""
}

// networkOf is the network ip is counted in; anything that is not an
// address counts as itself.
func networkOf(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil {
		return ip
	}
	return clientnet.Wide(a)
}

func (cs *Clients) admit(network string) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.byNetwork[network] >= cs.perNetwork {
		return false
	}
	cs.byNetwork[network]++
	return true
}

func (cs *Clients) release(network string) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.byNetwork[network]--; cs.byNetwork[network] <= 0 {
		delete(cs.byNetwork, network)
	}
}

func (cs *Clients) wrap(d *subscriptions.DefaultClient) *client {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.live++
	return &client{DefaultClient: d, clients: cs, byName: map[string]map[string]subscriptions.SubscriptionOptions{}}
}

// gone uncounts a discarded client.
func (cs *Clients) gone() {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	cs.live--
}

// count adds delta to the index once for each of topics, subscribed as a
// superuser or not.
func (cs *Clients) count(superuser bool, topics []string, delta int) {
	if len(topics) == 0 {
		return
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	for _, topic := range topics {
		key := indexKey{collectionOf(topic), superuser}
		if cs.byCollection[key] += delta; cs.byCollection[key] <= 0 {
			delete(cs.byCollection, key)
		}
	}
}

// subscribed reports whether the index holds a subscription to
// collection that may be heard: a superuser's, or, where the collection's
// list or view rule lets others than superusers read, anybody's.
// PocketBase sends nothing to others under a rule of superusers only.
// A client whose superuser auth PocketBase has since removed is still
// counted as a superuser's: the broadcast then checks it for nothing.
func (cs *Clients) subscribed(collection *core.Collection) bool {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	count := func(superuser bool) int {
		return cs.byCollection[indexKey{collection.Name, superuser}] + cs.byCollection[indexKey{collection.Id, superuser}]
	}
	return count(true) > 0 || (collection.ListRule != nil || collection.ViewRule != nil) && count(false) > 0
}

// Subscribed reports whether a realtime client of app subscribes to a
// topic of collection that it may hear: the collection ("NAME/*", or the
// older "NAME") or one of its records ("NAME/ID"), by its name or id, with
// or without options; PocketBase's broadcast matches among these. With the
// clients bound by Bind, it is a look-up, and a guest's subscription to a
// collection that only superusers may read is not counted; clients of
// another kind (registered by a self-hoster's code) are asked one by one.
func Subscribed(app core.App, collection *core.Collection) bool {
	broker := app.SubscriptionsBroker()
	total := broker.TotalClients()
	if total == 0 {
		return false
	}
	cs, _ := app.Store().Get(storeKey).(*Clients)
	if cs != nil {
		if cs.subscribed(collection) {
			return true
		}
		cs.mu.Lock()
		// A client is counted live before PocketBase registers it.
		foreign := total > cs.live
		cs.mu.Unlock()
		if !foreign {
			return false
		}
	}
	prefixes := []string{collection.Name + "/", collection.Name + "?", collection.Id + "/", collection.Id + "?"}
	for _, c := range broker.Clients() {
		if _, ours := c.(*client); ours && cs != nil {
			continue
		}
		if len(c.Subscriptions(prefixes...)) > 0 {
			return true
		}
	}
	return false
}
