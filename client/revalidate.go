package client

import (
	"container/list"
	"net/http"
	"sync"
)

// DefaultRevalidationEntries is Options.RevalidationEntries' default: the
// answers a client keeps to revalidate. A page of 100 pets is about 7 KB,
// so the client keeps at most about 1 MB.
const DefaultRevalidationEntries = 128

// keptAnswers are the latest 200s of the GET addresses the client called,
// each with its ETag, at most max of them, the least recently used dropped
// first. A call of a kept address sends If-None-Match with the tag, and on
// 304 Not Modified uses the kept body: the service still counts the request
// (docs/rate-limits.md), but sends no body. Addresses are whole URLs, query
// included, and the client has one API key, so an answer is only ever
// reused for the request that got it.
type keptAnswers struct {
	max int

	mu    sync.Mutex
	byURL map[string]*list.Element // of *keptAnswer
	order *list.List               // most recently used first
}

type keptAnswer struct {
	url, etag string
	header    http.Header
	body      []byte
}

// newKeptAnswers keeps up to max answers; nil (none) when max is negative.
func newKeptAnswers(max int) *keptAnswers {
	switch {
	case max < 0:
		return nil
	case max == 0:
		max = DefaultRevalidationEntries
	}
	return &keptAnswers{max: max, byURL: make(map[string]*list.Element), order: list.New()}
}

// get is the answer kept for url, or nil.
func (k *keptAnswers) get(url string) *keptAnswer {
	k.mu.Lock()
	defer k.mu.Unlock()
	e, ok := k.byURL[url]
	if !ok {
		return nil
	}
	k.order.MoveToFront(e)
	return e.Value.(*keptAnswer)
}

// keep keeps resp, a 200 of url, when it has an ETag, and otherwise
// forgets what was kept for url: the service no longer tags it.
func (k *keptAnswers) keep(url string, resp *response) {
	etag := resp.header.Get("ETag")
	k.mu.Lock()
	defer k.mu.Unlock()
	if e, ok := k.byURL[url]; ok {
		k.order.Remove(e)
		delete(k.byURL, url)
	}
	if etag == "" {
		return
	}
	k.byURL[url] = k.order.PushFront(&keptAnswer{url: url, etag: etag, header: resp.header, body: resp.body})
	if k.order.Len() > k.max {
		oldest := k.order.Back()
		k.order.Remove(oldest)
		delete(k.byURL, oldest.Value.(*keptAnswer).url)
	}
}

// revalidated is the kept answer as a 304 (notModified) renews it: its
// body, under the kept headers updated with the 304's (RFC 9111, 4.3.4:
// its rate-limit state, request id and ETag are the 304's).
func (a *keptAnswer) revalidated(notModified *response) *response {
	header := a.header.Clone()
	for name, values := range notModified.header {
		header[name] = values
	}
	r := *notModified
	r.status, r.statusText, r.header, r.body = http.StatusOK, "200 OK", header, a.body
	return &r
}
