package staff

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
	"github.com/pocketbase/pocketbase/tools/router"
)

// writeJSON writes v as the whole answer. PocketBase's e.JSON escapes "<",
// ">" and "&" as \u003c, \u003e and \u0026, which read badly where staff
// see a body (curl, the browser's network tab): the body is JSON, never
// HTML, so they stay as they are.
func writeJSON(e *core.RequestEvent, status int, v any) error {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil { // ends with a newline
		return err
	}
	e.Response.Header().Set("Content-Type", "application/json")
	e.Response.WriteHeader(status)
	if e.Request.Method == http.MethodHead {
		return nil
	}
	_, err := e.Response.Write(b.Bytes())
	return err
}

// jsonErrors writes the group's errors, PocketBase's shape, with writeJSON.
// It still returns the error, for PocketBase's request log; the final error
// handler then leaves the written answer alone. It runs just before the
// body limit, the group's first middleware, so the 401 of the superuser
// check and the 413 of the body limit are written the same way.
func jsonErrors() *hook.Handler[*core.RequestEvent] {
	return &hook.Handler[*core.RequestEvent]{
		Id:       "petstoreStaffJSONErrors",
		Priority: apis.DefaultBodyLimitMiddlewarePriority - 1,
		Func: func(e *core.RequestEvent) error {
			err := e.Next()
			if err != nil && !e.Written() {
				apiErr := router.ToApiError(err)
				if werr := writeJSON(e, apiErr.Status, apiErr); werr != nil {
					return werr
				}
			}
			return err
		},
	}
}
