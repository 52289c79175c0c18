// Package requestid names each request, so that a client's complaint, a
// proxy's log line, the service's log lines and the audit trail point at
// the same request: the id a trusted reverse proxy sent in X-Request-Id, or
// a new one, returned on every response as Request-Id and X-Request-Id and
// kept in the request's context for whatever logs or records it.
package requestid

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/http"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
)

// The headers that carry the id: Header on both sides, and Request-Id on
// responses (Stripe's and GitHub's name for it).
const (
	Header         = "X-Request-Id"
	ResponseHeader = "Request-Id"
)

// MaxLen bounds an id taken from a proxy.
const MaxLen = 128

// MiddlewareID is the middleware's id.
const MiddlewareID = "petstoreRequestID"

// Priority runs it before anything of PocketBase's or petstore's answers or
// logs, just after the proxy headers are sorted out (internal/proxytrust).
const Priority = -100000

type contextKey struct{}

// From is the id of the request whose context ctx is; "" outside one.
func From(ctx context.Context) string {
	id, _ := ctx.Value(contextKey{}).(string)
	return id
}

// NewContext is ctx naming its request id: one decided before the
// middleware runs (a cluster's leader takes a forwarding node's, once
// authenticated), which the middleware keeps.
func NewContext(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, contextKey{}, id)
}

// Decide is r's id: the X-Request-Id it carries when fromProxy says its peer
// is a trusted proxy and the id is valid, else a new one.
func Decide(r *http.Request, fromProxy func(remoteAddr string) bool) string {
	if id := r.Header.Get(Header); valid(id) && fromProxy(r.RemoteAddr) {
		return id
	}
	return New()
}

// Middleware names each request: with the id its context names already
// (NewContext), or as Decide does.
func Middleware(fromProxy func(remoteAddr string) bool) *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       MiddlewareID,
		Priority: Priority,
		Func: func(e *core.RequestEvent) error {
			id := From(e.Request.Context())
			if !valid(id) {
				id = Decide(e.Request, fromProxy)
			}
			h := e.Response.Header()
			h.Set(ResponseHeader, id)
			h.Set(Header, id)
			e.Request = e.Request.WithContext(context.WithValue(e.Request.Context(), contextKey{}, id))
			return e.Next()
		},
	}
}

// New is a new id: 16 random bytes in hex.
func New() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return hex.EncodeToString(b)
}

// valid reports whether id may be taken as it is: 1 to MaxLen characters
// that any log line, header and JSON string hold as they are (letters,
// digits and - _ . : / + =), so that a proxy's id can neither forge a log
// line nor carry a secret's worth of other bytes.
func valid(id string) bool {
	if id == "" || len(id) > MaxLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		switch c := id[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case c == '-' || c == '_' || c == '.' || c == ':' || c == '/' || c == '+' || c == '=':
		default:
			return false
		}
	}
	return true
}
