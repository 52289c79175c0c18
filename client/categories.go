package client

import (
	"context"
	"iter"
	"net/http"
	"net/url"
	"strconv"
)

// Category names the number pets carry as their CategoryID.
type Category struct {
	ID   int64  `json:"id"` // the CategoryID of its pets
	Name string `json:"name"`
}

// categoriesPage is how many categories each request asks for: the most.
const categoriesPage = 100

// ListCategories walks through the named categories in ascending ID order,
// page after page (each request with its own retries). A pet may carry a
// CategoryID that no category names. Breaking out of the loop stops the
// paging.
//
// The operation is beta (the document's x-stability): it may change
// within v1, announced in the service's changelog first.
//
// An error ends the walk, yielded once: an *Error with CodeUnauthorized for
// the API key, CodeInsufficientScope for a key without pets:read,
// CodeRateLimitExceeded or CodeAPIKeyBanned when the wait is longer than
// the call may wait; an *Error without Code when the answer is not the
// API's; a network or context error when no answer came after the retries.
// A new walk starts from the first category. With ReportAnswer, each
// page's answer (its request id, rate-limit state) is stored before its
// categories are yielded.
func (c *Client) ListCategories(ctx context.Context, callOpts ...CallOption) iter.Seq2[Category, error] {
	return func(yield func(Category, error) bool) {
		query := url.Values{"limit": {strconv.Itoa(categoriesPage)}}
		for {
			var page []Category
			resp, _, err := c.do(ctx, http.MethodGet, "categories", query, nil, nil, http.StatusOK, &page, func() bool {
				for _, category := range page {
					if category.ID <= 0 || category.Name == "" {
						return false
					}
				}
				return true
			}, callOpts)
			if err != nil {
				yield(Category{}, err)
				return
			}
			next, err := nextCursor(resp)
			if err != nil {
				yield(Category{}, err)
				return
			}
			for _, category := range page {
				if !yield(category, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			query.Set("cursor", next)
		}
	}
}
