package api

import (
	"context"
	"net/http"
	"time"

	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"

	"petstore/internal/apikeys"
	"petstore/internal/limits"
	"petstore/internal/usage"
)

const (
	rateLimitMiddlewareId = "petstoreRateLimit"
	eventKeyDecision      = "petstoreDecision"
)

// rateLimit decides every /v1 request: against its API key's quota when it
// has a valid one, and then against nothing else; otherwise against its
// client network's window for requests without a valid key. Refused
// requests (429) count in no window. Every response carries the rate-limit
// headers. Once counted, a request whose key lacks the route's scope is
// refused (outOfScope), before the limit may refuse it.
//
// A key's request goes into its usage history once answered, whatever the
// answer: its operation, the UTC hour its windows counted it in, and its
// outcome: limited when the limit refused it, else by status. getUsage's
// requests keep the decision on the event, for its handler.
//
// o, when not nil, counts each decision by plan and outcome, and each key's
// request answered by plan and usage outcome; dayUsed, when not nil, hears
// of a key whose day window admits no more; thresholds, when not nil, of
// every key's day window (it returns at once below 80 %).
func rateLimit(l *limits.Limiter, history *usage.Recorder, o Observer, dayUsed func(keyID string, at time.Time),
	thresholds *usage.Thresholds) *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       rateLimitMiddlewareId,
		Priority: rateLimitPriority,
		Func: func(e *core.RequestEvent) error {
			// A client hanging up must neither skip the count nor look like a
			// Redis failure; the store bounds its own calls.
			ctx := context.WithoutCancel(e.Request.Context())
			key := apiKeyOf(e)
			if key == nil {
				d, err := l.TakeAnonymous(ctx, e.RealIP())
				if err != nil {
					return err
				}
				d.SetHeaders(e.Response.Header())
				if o != nil {
					observeDecision(o, nil, d)
				}
				return refusedOrNext(e, d)
			}
			d, err := l.TakeKey(ctx, limitsKey(key))
			if err != nil {
				return err
			}
			d.SetHeaders(e.Response.Header())
			operation := operationOf(e.Request.Pattern)
			if operation == getUsageOperation {
				// Kept for its handler alone: storing it costs every other
				// request an allocation.
				e.Set(eventKeyDecision, d)
			}
			if dayUsed != nil && d.DayUsedUp() {
				dayUsed(key.ID, d.At)
			}
			if thresholds != nil {
				day := d.Day()
				thresholds.Observe(key.ID, key.Customer, key.Plan, day.Limit, day.Used, day.Reset, d.At)
			}
			if o != nil {
				observeDecision(o, key, d)
			}
			answered := false
			defer func() {
				if !answered { // a panic, which PocketBase's recovery answers with 500
					recordUsage(history, o, key, operation, d.At, usage.Failed)
				}
			}()
			err = outOfScope(e, key)
			if err == nil {
				err = refusedOrNext(e, d)
			}
			answered = true
			outcome := usage.OutcomeOf(statusOf(e, err))
			if d.Exceeded() {
				// Refused by the limit, whatever answered (a 403 for the
				// scope comes first): counted in no window.
				outcome = usage.Limited
			}
			recordUsage(history, o, key, operation, d.At, outcome)
			return err
		},
	}
}

// recordUsage counts a key's request answered in its usage history and, with
// o, by its plan and outcome.
func recordUsage(history *usage.Recorder, o Observer, key *apikeys.Key, operation string, at time.Time, outcome usage.Outcome) {
	history.Record(key.ID, operation, at, outcome)
	if o != nil {
		o.ObservePlanRequest(key.Plan, outcome.String())
	}
}

// refusedOrNext is the refusal of a request d refused, or the rest of the
// chain.
func refusedOrNext(e *core.RequestEvent, d limits.Decision) error {
	switch {
	case d.Banned():
		return newError(http.StatusTooManyRequests, CodeAPIKeyBanned,
			"This API key is banned until %s for sending requests while rate limited.",
			d.BannedUntil.UTC().Format(time.RFC3339))
	case d.Exceeded():
		return newError(http.StatusTooManyRequests, CodeRateLimitExceeded,
			"Rate limit exceeded: retry after %d seconds.", d.RetryAfter())
	}
	return e.Next()
}

// decisionOf is the rate limit's decision on the request of a valid key.
func decisionOf(e *core.RequestEvent) (limits.Decision, bool) {
	d, ok := e.Get(eventKeyDecision).(limits.Decision)
	return d, ok
}

// countUncounted counts a request that failed before rateLimit could count
// it (the key lookup's database failed) against its client network, the one
// caller it is known by, so that its 500 carries the rate-limit headers too.
func countUncounted(l *limits.Limiter) *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       "petstoreCountUncounted",
		Priority: countUncountedPriority,
		Func: func(e *core.RequestEvent) error {
			err := e.Next()
			if err == nil || e.Response.Header().Get("X-RateLimit-Limit") != "" {
				return err
			}
			if d, takeErr := l.TakeAnonymous(context.WithoutCancel(e.Request.Context()), e.RealIP()); takeErr == nil {
				d.SetHeaders(e.Response.Header())
			}
			return err
		},
	}
}

// limitsKey is k as the limiter sees it.
func limitsKey(k *apikeys.Key) limits.Key {
	return limits.Key{
		ID:          k.ID,
		Customer:    k.Customer,
		Quota:       limits.Quota{PerMinute: k.PerMinute, PerDay: k.PerDay, BanAfter: k.BanAfter, BanFor: k.BanFor},
		BannedUntil: k.BannedUntil,
		BanLifted:   k.BanLifted,
	}
}

// observeDecision hands o the plan and outcome of a decision.
func observeDecision(o Observer, key *apikeys.Key, d limits.Decision) {
	plan := planAnonymous
	if key != nil {
		plan = key.Plan
	}
	switch {
	case d.Banned():
		o.ObserveRateLimit(plan, outcomeBanned)
	case d.Exceeded():
		o.ObserveRateLimit(plan, outcomeLimited)
	default:
		o.ObserveRateLimit(plan, outcomeAdmitted)
	}
}
