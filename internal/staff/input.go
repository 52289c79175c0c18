package staff

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/router"

	"petstore/internal/apikeys"
	"petstore/internal/usage"
)

// The request bodies. Pointers tell "not sent" from zero.
type (
	createRequest struct {
		Plan      string  `json:"plan"`
		Name      string  `json:"name"`
		PerMinute int     `json:"perMinute"` // 0: the plan's
		PerDay    int     `json:"perDay"`    // 0: the plan's
		Expires   *string `json:"expires"`   // RFC 3339; null: never
	}
	changeRequest struct {
		Name      *string `json:"name"`
		Plan      *string `json:"plan"`
		PerMinute *int    `json:"perMinute"`
		PerDay    *int    `json:"perDay"`
	}
	rollRequest struct {
		GraceSeconds *int64 `json:"graceSeconds"`
	}
)

func (c createRequest) newKey() (apikeys.NewKey, error) {
	nk := apikeys.NewKey{Plan: c.Plan, Name: c.Name, PerMinute: c.PerMinute, PerDay: c.PerDay}
	if c.Expires != nil {
		t, err := time.Parse(time.RFC3339, *c.Expires)
		if err != nil {
			return nk, badRequest("expires must be an RFC 3339 time such as 2027-01-31T00:00:00Z, or null")
		}
		nk.Expires = t
	}
	return nk, nil
}

func (c changeRequest) changes() (apikeys.Changes, error) {
	if c == (changeRequest{}) {
		return apikeys.Changes{}, badRequest("nothing to change: send name, plan, perMinute or perDay")
	}
	return apikeys.Changes{Name: c.Name, Plan: c.Plan, PerMinute: c.PerMinute, PerDay: c.PerDay}, nil
}

func (r rollRequest) grace() (time.Duration, error) {
	if r.GraceSeconds == nil {
		return 0, badRequest("graceSeconds is required: how long the old secret keeps working (0: not at all)")
	}
	s := *r.GraceSeconds
	if s < 0 || s > int64(apikeys.MaxGrace/time.Second) {
		return 0, badRequest("graceSeconds must be from 0 to %d", int64(apikeys.MaxGrace/time.Second))
	}
	return time.Duration(s) * time.Second, nil
}

// decodeBody reads the request's JSON object into v, strictly: declared as
// JSON, one object, no unknown members.
func decodeBody(e *core.RequestEvent, v any) error {
	if mt, _, err := mime.ParseMediaType(e.Request.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return router.NewApiError(http.StatusUnsupportedMediaType, "The body must be JSON, sent as Content-Type: application/json.", nil)
	}
	// Read whole first: PocketBase's body wrapper starts over after EOF, so a
	// decoder reading it could never see the end.
	body, err := io.ReadAll(e.Request.Body)
	if err == nil {
		dec := json.NewDecoder(bytes.NewReader(body))
		dec.DisallowUnknownFields()
		err = dec.Decode(v)
		if _, end := dec.Token(); err == nil && end != io.EOF {
			err = errors.New("more after the object")
		}
	}
	var typeErr *json.UnmarshalTypeError
	switch {
	case err == nil:
		return nil
	case errors.Is(err, apis.ErrRequestEntityTooLarge):
		return apis.ErrRequestEntityTooLarge
	case errors.As(err, &typeErr) && typeErr.Field != "":
		return badRequest("%s has the wrong type", typeErr.Field)
	default:
		// encoding/json's messages name no Go types for syntax errors and
		// unknown members.
		return badRequest("the body must be one JSON object with the documented members (%s)", err)
	}
}

// parseDays reads ?days=N: 1 to usage.Retention, default 30.
func parseDays(q url.Values) (int, error) {
	values := q["days"]
	if len(values) == 0 {
		return 30, nil
	}
	v := values[0]
	n, err := strconv.Atoi(v)
	if len(values) > 1 || err != nil || n < 1 || n > usage.Retention || v != strconv.Itoa(n) {
		return 0, badRequest("days must be a whole number from 1 to %d, given once", usage.Retention)
	}
	return n, nil
}

func badRequest(format string, a ...any) error {
	return router.NewBadRequestError(fmt.Sprintf(format, a...), nil)
}

// storeError is err as the answer to the caller: their mistakes as 400 or
// 404 with the store's message, anything else as it is (a 500 that PocketBase
// logs without showing).
func storeError(err error) error {
	switch {
	case errors.Is(err, apikeys.ErrNotFound):
		return router.NewNotFoundError(err.Error(), nil)
	case errors.Is(err, apikeys.ErrUnknownPlan), errors.Is(err, apikeys.ErrBadSettings):
		return badRequest("%s", err)
	}
	return err
}
