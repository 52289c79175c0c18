package api

import (
	"net/http"
	"strings"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"petstore/internal/requestid"
	"petstore/internal/requestlog"
	"petstore/internal/tracing"
)

// TraceRequestsID is the id of the router's request spans.
const TraceRequestsID = "petstoreTraceRequests"

// TraceRequests makes each request's span, named as OpenTelemetry's HTTP
// conventions name a server span ("GET /v1/pets/{petId}"), the child of the
// traceparent the request carries (from a proxy, or from a follower that
// forwarded it); the spans of the work the request does (its key's lookup,
// the rate limit, SQLite's reads, the group commit) are its children. It is
// bound router-wide, after the request's id is decided, and only while
// tracing is on (tracing.On).
func TraceRequests() *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       TraceRequestsID,
		Priority: requestid.Priority + 1,
		Func: func(e *core.RequestEvent) error {
			route := routeOf(e.Request.Pattern)
			ctx, span := tracing.StartServer(e.Request.Context(), propagation.HeaderCarrier(e.Request.Header), spanName(e.Request.Method, route))
			defer span.End()
			if span.IsRecording() {
				span.SetAttributes(
					attribute.String("http.request.method", methodLabel(e.Request.Method)),
					attribute.String("url.path", e.Request.URL.EscapedPath()),
					attribute.String("client.address", e.RealIP()),
					attribute.String("user_agent.original", e.Request.UserAgent()),
					attribute.String("petstore.request_id", requestid.From(ctx)),
				)
				if route != "" {
					span.SetAttributes(attribute.String("http.route", route))
				}
			}
			e.Request = e.Request.WithContext(ctx)
			err := e.Next()
			recordStatus(span, requestlog.StatusOf(e, err), err)
			return err
		},
	}
}

// routeOf is the path of a ServeMux pattern ("GET /v1/pets/{petId}"), or ""
// for the site's catch-all.
func routeOf(pattern string) string {
	if _, path, ok := strings.Cut(pattern, " "); ok {
		pattern = path
	}
	if pattern == "/{path...}" {
		return ""
	}
	return pattern
}

// spanName is a server span's name: the method and the route, or the
// method alone when no route but the catch-all matched (a path is not a
// name: its values are unbounded).
func spanName(method, route string) string {
	method = methodLabel(method)
	if route == "" {
		return method
	}
	return method + " " + route
}

// recordStatus sets the answer's status on span: a server span fails on a
// 5xx, not on a client's error.
func recordStatus(span trace.Span, status int, err error) {
	if !span.IsRecording() {
		return
	}
	span.SetAttributes(attribute.Int("http.response.status_code", status))
	if status >= http.StatusInternalServerError {
		if err != nil {
			span.RecordError(err)
		}
		span.SetStatus(codes.Error, http.StatusText(status))
	}
}
