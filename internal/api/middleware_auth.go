package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/apikeys"
	"petstore/internal/dataversion"
)

const (
	identifyKeyMiddlewareId  = "petstoreIdentifyKey"
	requireKeyMiddlewareId   = "petstoreRequireKey"
	requireScopeMiddlewareId = "petstoreRequireScope"

	// eventKeyAPIKey holds the request's valid *apikeys.Key;
	// eventKeyAuthError holds why there is none; eventKeyScope holds the
	// apikeys.Scope the route needs (requireScope).
	eventKeyAPIKey    = "petstoreApiKey"
	eventKeyAuthError = "petstoreAuthError"
	eventKeyScope     = "petstoreScope"

	authRealm = "petstore"
)

var (
	errKeyMissing = newError(http.StatusUnauthorized, CodeUnauthorized,
		"An API key is required: send it as Authorization: Bearer <key>.")
	errKeyInvalid = newError(http.StatusUnauthorized, CodeUnauthorized,
		"The API key is invalid, revoked or expired.")
)

// identifyKey resolves the request's bearer API key, if any, without refusing
// anything yet: the rate limit needs to know the caller for every /v1
// response, and requireKey decides which routes need one.
func identifyKey(keys *apikeys.Finder, lastUse *apikeys.LastUse, version *dataversion.Watch) *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       identifyKeyMiddlewareId,
		Priority: identifyKeyPriority,
		Func: func(e *core.RequestEvent) error {
			key, authErr := bearerToken(e.Request.Header)
			if authErr == nil {
				v, err := dataVersion(e, version)
				if err != nil {
					return err
				}
				k, err := keys.Find(e.Request.Context(), v, key)
				switch {
				case errors.Is(err, apikeys.ErrInvalid):
					authErr = errKeyInvalid
				case err != nil:
					return err
				default:
					e.Set(eventKeyAPIKey, k)
					lastUse.Record(k, time.Now())
				}
			}
			if authErr != nil {
				e.Set(eventKeyAuthError, authErr)
			}
			return e.Next()
		},
	}
}

// requireKey refuses requests without a valid API key (RFC 6750).
func requireKey() *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       requireKeyMiddlewareId,
		Priority: requireKeyPriority,
		Func: func(e *core.RequestEvent) error {
			authErr, _ := e.Get(eventKeyAuthError).(*Error)
			switch authErr {
			case nil:
				return e.Next()
			case errKeyMissing:
				e.Response.Header().Set("WWW-Authenticate", `Bearer realm="`+authRealm+`"`)
			default:
				e.Response.Header().Set("WWW-Authenticate", `Bearer realm="`+authRealm+`", error="invalid_token"`)
			}
			return authErr
		},
	}
}

// requireScope makes the route need scope of its API key. A request whose
// key lacks it is refused with 403 insufficient_scope by rateLimit, after
// the request is counted against the key and before the limit can refuse
// it: a request the key may never make is told so, not to retry later. A
// request without a valid key is still refused by requireKey (401).
func requireScope(scope apikeys.Scope) *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       requireScopeMiddlewareId,
		Priority: requireScopePriority,
		Func: func(e *core.RequestEvent) error {
			e.Set(eventKeyScope, scope)
			return e.Next()
		},
	}
}

// outOfScope is the refusal of a request whose key k lacks the scope its
// route needs, or nil when k has it or the route needs none (RFC 6750
// section 3.1). Retry-After goes: waiting does not help.
func outOfScope(e *core.RequestEvent, k *apikeys.Key) error {
	needed, ok := e.Get(eventKeyScope).(apikeys.Scope)
	if !ok || k.Allows(needed) {
		return nil
	}
	h := e.Response.Header()
	h.Del("Retry-After")
	h.Set("WWW-Authenticate", `Bearer error="insufficient_scope", scope="`+string(needed)+`"`)
	has := "none"
	if len(k.Scopes) > 0 {
		has = strings.Join(apikeys.ScopeNames(k.Scopes), ", ")
	}
	return newError(http.StatusForbidden, CodeInsufficientScope,
		"This request needs the scope %s, which this API key does not have (its scopes: %s).", needed, has)
}

// apiKeyOf is the request's valid API key, or nil.
func apiKeyOf(e *core.RequestEvent) *apikeys.Key {
	k, _ := e.Get(eventKeyAPIKey).(*apikeys.Key)
	return k
}

// apiKeyID is the id of the request's valid API key: what per-key state
// (rate limits, idempotency keys) is scoped by. Only for routes behind
// requireKey.
func apiKeyID(e *core.RequestEvent) string { return apiKeyOf(e).ID }

// bearerToken reads the key from the one Authorization header. Keys are never
// read from the query string, where logs and browser histories keep them.
func bearerToken(h http.Header) (string, *Error) {
	values := h.Values("Authorization")
	switch {
	case len(values) == 0:
		return "", errKeyMissing
	case len(values) > 1:
		return "", errKeyInvalid
	}
	scheme, token, _ := strings.Cut(values[0], " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", errKeyMissing // another scheme carries no API key
	}
	token = strings.TrimLeft(token, " ")
	if token == "" || strings.ContainsAny(token, " \t,") {
		return "", errKeyInvalid
	}
	return token, nil
}
