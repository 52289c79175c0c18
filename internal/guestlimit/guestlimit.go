// Package guestlimit bounds the requests outside /v1 that carry no
// PocketBase auth (the pages, the dashboard's files, PocketBase's API and
// health check) per client network, in the limiter's guest window: a
// client without credentials cannot send the service more than that, nor
// make it log more (the request log coalesces the refusals).
package guestlimit

import (
	"context"
	"strconv"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/limits"
)

// MiddlewareID is the middleware's id: /v1, which limits its own keyless
// callers, unbinds it.
const MiddlewareID = "petstoreGuestLimit"

// Priority runs the limit once PocketBase has loaded the request's auth
// token (which tells a guest from a signed-in user) and before anything
// else of PocketBase's works on the request.
const Priority = apis.DefaultLoadAuthTokenMiddlewarePriority + 1

// Middleware counts each request without PocketBase auth against its client
// network's guest window, and refuses it with 429 and Retry-After when the
// window is full. Signed-in superusers and users are not counted.
func Middleware(l *limits.Limiter) *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       MiddlewareID,
		Priority: Priority,
		Func: func(e *core.RequestEvent) error {
			if e.Auth != nil {
				return e.Next()
			}
			// A client hanging up must not skip the count.
			d, err := l.TakeGuest(context.WithoutCancel(e.Request.Context()), e.RealIP())
			if err != nil {
				return e.InternalServerError("", err)
			}
			if d.Exceeded() {
				e.Response.Header().Set("Retry-After", strconv.FormatInt(d.RetryAfter(), 10))
				return e.TooManyRequestsError("Too many requests from your network without signing in; try again later.", nil)
			}
			return e.Next()
		},
	}
}
