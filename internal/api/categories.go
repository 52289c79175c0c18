package api

import (
	"encoding/base64"
	"strconv"
	"strings"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/categories"
	"petstore/internal/dataversion"
	"petstore/internal/strictinput"
)

// handleListCategories serves listCategories: a page of categories, and
// the Link to the next, under categoriesURL, its address.
func handleListCategories(reads *categories.Reads, version *dataversion.Watch, categoriesURL string) func(*core.RequestEvent) error {
	nextPage := "<" + categoriesURL + "?cursor="
	return func(e *core.RequestEvent) error {
		limit, after, qerr := parseCategoriesQuery(e.Request.URL.RawQuery)
		if qerr != nil {
			return qerr
		}
		v, err := dataVersion(e, version)
		if err != nil {
			return err
		}
		page, err := reads.List(e.Request.Context(), v, limit, after)
		if err != nil {
			return err
		}
		if page.Next != 0 {
			e.Response.Header().Set("Link", nextPage+encodeCategoryCursor(page.Next)+
				"&limit="+strconv.Itoa(limit)+`>; rel="next"`)
		}
		return writeTaggedJSON(e, categoriesPageTag(v, limit, after), page.JSON)
	}
}

// parseCategoriesQuery reads listCategories' raw query string: limit
// (defaultLimit when absent) and the cursor's number (0: from the first).
// Unknown, repeated or malformed parameters are refused, as listPets does.
func parseCategoriesQuery(rawQuery string) (limit int, after int64, _ *Error) {
	limit = defaultLimit
	q, qerr := parseQuery(rawQuery)
	if qerr != nil {
		return 0, 0, qerr
	}
	for name, values := range q {
		if len(values) > 1 {
			return 0, 0, invalidRequest("Query parameter %q must be given at most once.", name)
		}
		v := values[0]
		switch name {
		case "limit":
			n, lerr := parseLimit(v)
			if lerr != nil {
				return 0, 0, lerr
			}
			limit = n
		case "cursor":
			n, ok := decodeCategoryCursor(v)
			if !ok {
				return 0, 0, invalidRequest("cursor is not valid: use the one from the Link header of the previous page.")
			}
			after = n
		default:
			return 0, 0, unknownParameter(name, "limit, cursor")
		}
	}
	return limit, after, nil
}

// categoryCursorVersion starts a categories' cursor: a pets' cursor is
// never one.
const categoryCursorVersion = "c1:"

// encodeCategoryCursor makes the opaque cursor of the page after the
// category with number.
func encodeCategoryCursor(number int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte(categoryCursorVersion + strconv.FormatInt(number, 10)))
}

func decodeCategoryCursor(s string) (int64, bool) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return 0, false
	}
	digits, ok := strings.CutPrefix(string(raw), categoryCursorVersion)
	if !ok {
		return 0, false
	}
	n, err := strictinput.PositiveDecimal(digits)
	return n, err == nil && n <= categories.MaxNumber
}
