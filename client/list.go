package client

import (
	"context"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// ListOptions select a page of pets, or where a walk starts.
type ListOptions struct {
	Limit  int    // pets per page, 1 to 100; 0: the service's default, 20
	Status Status // only pets with this status; empty: any status
	// Cursor is where the page starts: "" for the first page, else a
	// Page.Next or a ListError.Cursor. Pass it with the Limit and Status it
	// came from.
	Cursor string
}

// Page is one page of pets.
type Page struct {
	Pets []Pet // in ascending ID order
	// Next is the cursor of the next page, to pass as ListOptions.Cursor;
	// "" on the last page.
	Next   string
	Answer Answer // what the answer told besides the pets: its request id, rate-limit state, headers
}

// ListPage fetches one page of pets in ascending ID order: the first page,
// or the one at opts.Cursor.
//
// The service names the next page in a Link header, absolute or relative to
// wherever it believes it is served; ListPage keeps only its cursor, and the
// next call asks the client's own base URL. So paging works behind a
// gateway that maps another path to the service, and the API key goes to no
// other address.
//
// Errors: an *Error with CodeInvalidRequest for a bad Limit, Status or
// Cursor, CodeUnauthorized for the API key, CodeInsufficientScope for a key
// without pets:read, CodeRateLimitExceeded or CodeAPIKeyBanned when the wait is longer than the call may wait; an *Error
// without Code when the answer is not the API's; a network or context error
// when no answer came after the retries. On an error the Page is empty.
func (c *Client) ListPage(ctx context.Context, opts ListOptions, callOpts ...CallOption) (Page, error) {
	query := url.Values{}
	if opts.Limit != 0 {
		query.Set("limit", strconv.Itoa(opts.Limit))
	}
	if opts.Status != "" {
		query.Set("status", string(opts.Status))
	}
	if opts.Cursor != "" {
		query.Set("cursor", opts.Cursor)
	}
	var pets []Pet
	resp, a, err := c.do(ctx, http.MethodGet, "pets", query, nil, nil, http.StatusOK, &pets, func() bool {
		for _, p := range pets {
			if p.ID <= 0 {
				return false
			}
		}
		return true
	}, callOpts)
	if err != nil {
		return Page{}, err
	}
	next, err := nextCursor(resp)
	if err != nil {
		return Page{}, err
	}
	if pets == nil {
		pets = []Pet{}
	}
	return Page{Pets: pets, Next: next, Answer: a}, nil
}

// ListPets walks through the pets in ascending ID order, page after page
// (each a ListPage call with its own retries), from opts.Cursor or the
// first page. Breaking out of the loop stops the paging.
//
// An error ends the walk: the iterator yields it as a *ListError, whose
// Cursor resumes the walk at the first pet not yet yielded, and which wraps
// the errors ListPage returns (errors.As finds the *Error). With
// ReportAnswer, each page's answer (its request id, rate-limit state) is
// stored before its pets are yielded.
func (c *Client) ListPets(ctx context.Context, opts ListOptions, callOpts ...CallOption) iter.Seq2[Pet, error] {
	return func(yield func(Pet, error) bool) {
		for {
			page, err := c.ListPage(ctx, opts, callOpts...)
			if err != nil {
				yield(Pet{}, &ListError{Cursor: opts.Cursor, Err: err})
				return
			}
			for _, pet := range page.Pets {
				if !yield(pet, nil) {
					return
				}
			}
			if page.Next == "" {
				return
			}
			opts.Cursor = page.Next
		}
	}
}

// ListError is the error that ends a ListPets walk. The walk resumes with
// ListPets (or ListPage) and ListOptions{Cursor: e.Cursor} with the walk's
// Limit and Status: it goes on at the first pet not yet yielded, and misses
// or repeats none.
type ListError struct {
	Cursor string // "" when the walk failed on the first page of a walk from the start
	Err    error
}

func (e *ListError) Error() string {
	if e.Cursor == "" {
		return e.Err.Error() + " (listing from the start)"
	}
	return fmt.Sprintf("%v (listing from cursor %s)", e.Err, e.Cursor)
}

func (e *ListError) Unwrap() error { return e.Err }

// nextCursor is the cursor of the answer's Link rel="next", or "" when it
// has none. The target may be absolute or relative; only its cursor is used.
func nextCursor(resp *response) (string, error) {
	link := nextLink(resp.header.Values("Link"))
	if link == "" {
		return "", nil
	}
	target, err := resp.url.Parse(link)
	if err == nil {
		if cursors := target.Query()["cursor"]; len(cursors) == 1 && cursors[0] != "" {
			return cursors[0], nil
		}
	}
	return "", fmt.Errorf("petstore client: %s %s answered Link <%s>; rel=\"next\", which names no cursor", resp.method, resp.url.Redacted(), link)
}

// nextLink is the target of the rel="next" link of Link header values
// (RFC 8288), or "". The service sends one link; this reads any number.
func nextLink(values []string) string {
	for _, v := range values {
		for v != "" {
			start, end := strings.IndexByte(v, '<'), strings.IndexByte(v, '>')
			if start < 0 || end < start {
				break
			}
			target := v[start+1 : end]
			params, rest, _ := strings.Cut(v[end+1:], ",")
			for param := range strings.SplitSeq(params, ";") {
				name, value, _ := strings.Cut(strings.TrimSpace(param), "=")
				if strings.EqualFold(name, "rel") && relHasNext(strings.Trim(value, `"`)) {
					return target
				}
			}
			v = rest
		}
	}
	return ""
}

func relHasNext(rel string) bool {
	for r := range strings.FieldsSeq(rel) {
		if strings.EqualFold(r, "next") {
			return true
		}
	}
	return false
}
