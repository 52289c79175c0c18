package realtime

import (
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/subscriptions"
)

// client is a realtime client whose subscriptions are indexed by topic name
// (a topic up to its options, "pets/*" of "pets/*?options=…"). PocketBase's
// broadcast asks every client, for each record event, for its
// subscriptions under six prefixes of the form "NAME?"; PocketBase's own
// client answers each by scanning every topic and copying it, and this one
// by one look-up. The embedded client keeps the id, the channel and the
// store; its own subscriptions stay empty.
type client struct {
	*subscriptions.DefaultClient
	clients *Clients

	mu        sync.RWMutex
	byName    map[string]map[string]subscriptions.SubscriptionOptions // topic name → topic → options
	superuser bool                                                    // the auth its subscriptions are indexed under
	discarded bool
}

// topicName is topic up to its options: the part PocketBase's broadcast
// matches, followed by the "?" it appends.
func topicName(topic string) string {
	name, _, _ := strings.Cut(topic, "?")
	return name
}

// collectionOf is the collection (its name or id) a topic names: topic up
// to its first "/" or "?".
func collectionOf(topic string) string {
	if i := strings.IndexAny(topic, "/?"); i >= 0 {
		return topic[:i]
	}
	return topic
}

// matches is PocketBase's test of a subscription against a prefix,
// strings.HasPrefix(topic+"?", prefix), without building the string.
func matches(topic, prefix string) bool {
	if len(prefix) <= len(topic) {
		return strings.HasPrefix(topic, prefix)
	}
	return len(prefix) == len(topic)+1 && prefix[len(topic)] == '?' && strings.HasPrefix(prefix, topic)
}

// Subscriptions is the client's subscriptions matching any of prefixes,
// all of them without a prefix, as PocketBase's client answers. It
// allocates nothing when none matches: PocketBase's broadcast asks every
// client.
func (c *client) Subscriptions(prefixes ...string) map[string]subscriptions.SubscriptionOptions {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var result map[string]subscriptions.SubscriptionOptions
	for _, prefix := range prefixes {
		// "NAME?" with no other "?" matches exactly the topics named NAME.
		if name, ok := strings.CutSuffix(prefix, "?"); ok && !strings.Contains(name, "?") {
			result = addAll(result, c.byName[name], "")
			continue
		}
		for _, topics := range c.byName {
			result = addAll(result, topics, prefix)
		}
	}
	if len(prefixes) == 0 {
		for _, topics := range c.byName {
			result = addAll(result, topics, "")
		}
	}
	return result
}

// addAll adds to result the topics that match prefix (all of them for "").
func addAll(result, topics map[string]subscriptions.SubscriptionOptions, prefix string) map[string]subscriptions.SubscriptionOptions {
	for topic, options := range topics {
		if prefix != "" && !matches(topic, prefix) {
			continue
		}
		if result == nil {
			result = map[string]subscriptions.SubscriptionOptions{}
		}
		result[topic] = options
	}
	return result
}

// Subscribe adds subs to the client's subscriptions, their options read by
// PocketBase's own client (the embedded one, emptied again at once), and
// indexes them under the client's auth, which PocketBase sets before: a
// guest's subscription counts for a collection only where its rules let
// others than superusers read. A discarded client subscribes to nothing.
func (c *client) Subscribe(subs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.discarded {
		return
	}
	auth, _ := c.Get(apis.RealtimeClientAuthKey).(*core.Record)
	if superuser := auth != nil && auth.IsSuperuser(); superuser != c.superuser {
		all := c.topics()
		c.clients.count(c.superuser, all, -1)
		c.superuser = superuser
		c.clients.count(c.superuser, all, 1)
	}
	c.DefaultClient.Subscribe(subs...)
	parsed := c.DefaultClient.Subscriptions()
	c.DefaultClient.Unsubscribe()
	var added []string
	for topic, options := range parsed {
		name := topicName(topic)
		topics := c.byName[name]
		if topics == nil {
			topics = map[string]subscriptions.SubscriptionOptions{}
			c.byName[name] = topics
		}
		if _, ok := topics[topic]; !ok {
			added = append(added, topic)
		}
		topics[topic] = options
	}
	c.clients.count(c.superuser, added, 1)
}

// topics is every topic the client subscribes to.
func (c *client) topics() []string {
	var all []string
	for _, topics := range c.byName {
		all = slices.AppendSeq(all, maps.Keys(topics))
	}
	return all
}

// Unsubscribe removes subs from the client's subscriptions, all of them
// without subs.
func (c *client) Unsubscribe(subs ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unsubscribe(subs...)
}

func (c *client) unsubscribe(subs ...string) {
	var removed []string
	if len(subs) == 0 {
		removed = c.topics()
		clear(c.byName)
	}
	for _, topic := range subs {
		name := topicName(topic)
		if _, ok := c.byName[name][topic]; !ok {
			continue
		}
		removed = append(removed, topic)
		if delete(c.byName[name], topic); len(c.byName[name]) == 0 {
			delete(c.byName, name)
		}
	}
	c.clients.count(c.superuser, removed, -1)
}

// HasSubscription reports whether the client subscribes to sub.
func (c *client) HasSubscription(sub string) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	_, ok := c.byName[topicName(sub)][sub]
	return ok
}

// Discard ends the client, as PocketBase's does, and takes its
// subscriptions out of the collections' index; once is enough.
func (c *client) Discard() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.DefaultClient.Discard()
	if c.discarded {
		return
	}
	c.discarded = true
	c.unsubscribe()
	c.clients.gone()
}
