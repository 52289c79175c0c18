package api

import (
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
)

// The stability levels of the document's operations (its x-stability
// extension; docs/api.md says what each promises). A stable operation
// carries no header; every response of another carries stabilityHeader,
// so that a client's logs show what it relies on.
const (
	stabilityHeader = "API-Stability"
	stabilityBeta   = "beta"
)

// stability marks every response of a route, errors included, with its
// level.
func stability(level string) *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       "petstoreStability",
		Priority: stabilityPriority,
		Func: func(e *core.RequestEvent) error {
			e.Response.Header().Set(stabilityHeader, level)
			return e.Next()
		},
	}
}
