// Package client is a Go client of the petstore /v1 API.
//
// The typed operations and models (Pet, NewPet, ErrorCode and its constants,
// ClientWithResponses, ...) are generated from openapi/openapi.yaml by
// oapi-codegen into api.gen.go. On top of them, Petstore adds what the
// specification asks of clients: it pages with ListPets, creates with an
// Idempotency-Key per logical create, and retries 429, 503 and network
// errors, waiting for Retry-After when given and backing off exponentially
// with full jitter otherwise. Failures are *Error values.
package client

//go:generate go run github.com/oapi-codegen/oapi-codegen/v2/cmd/oapi-codegen@v2.8.2 -config oapi-codegen.yaml ../openapi/openapi.yaml

import (
	"context"
	"crypto/rand"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// Options configure a Petstore; zero values take the defaults.
type Options struct {
	// HTTPClient sends each attempt. Default: a client with pooled
	// connections and no timeout of its own (bound calls with their context).
	HTTPClient *http.Client
	// MaxAttempts bounds the attempts of one call, the first included.
	// Default 5.
	MaxAttempts int
	// MinBackoff and MaxBackoff bound the exponential backoff used when the
	// service gives no Retry-After: attempt n waits a random time between 0
	// and min(MaxBackoff, MinBackoff * 2^n). Defaults 250 ms and 30 s.
	MinBackoff, MaxBackoff time.Duration
	// MaxRetryAfter is the longest Retry-After a call waits for (a banned
	// key's can be many minutes); beyond it, or beyond the context's
	// deadline, the call returns the *Error at once. Default 2 minutes.
	MaxRetryAfter time.Duration
}

// Petstore is a client of one service for one API key. It is safe for
// concurrent use.
type Petstore struct {
	api  *ClientWithResponses
	base *url.URL
}

// New returns a client of the service at baseURL (the base URL including
// /v1, e.g. https://petstore.example.com/v1) that sends apiKey.
func New(baseURL, apiKey string, opts Options) (*Petstore, error) {
	base, err := url.Parse(strings.TrimSuffix(baseURL, "/") + "/")
	if err != nil || (base.Scheme != "http" && base.Scheme != "https") || base.Host == "" {
		return nil, fmt.Errorf("petstore client: base URL %q is not an absolute http(s) URL", baseURL)
	}
	p := newPolicy(opts)
	retrying := &retryablehttp.Client{
		HTTPClient:   opts.HTTPClient,
		RetryWaitMin: p.minBackoff,
		RetryWaitMax: p.maxBackoff,
		RetryMax:     p.maxAttempts - 1,
		CheckRetry:   p.checkRetry,
		Backoff:      p.backoff,
		// The last answer goes back to the caller as it came, to be read as
		// an Error, instead of retryablehttp's "giving up" error.
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
	api, err := NewClientWithResponses(base.String(),
		WithHTTPClient(doer{retrying}),
		WithRequestEditorFn(func(_ context.Context, req *http.Request) error {
			req.Header.Set("Authorization", "Bearer "+apiKey)
			return nil
		}))
	if err != nil {
		return nil, err
	}
	return &Petstore{api: api, base: base}, nil
}

// doer sends the generated client's requests through retryablehttp, which
// rewinds the body for every attempt.
type doer struct{ c *retryablehttp.Client }

func (d doer) Do(req *http.Request) (*http.Response, error) {
	r, err := retryablehttp.FromRequest(req)
	if err != nil {
		return nil, err
	}
	return d.c.Do(r)
}

// ListOptions select the pets ListPets walks through.
type ListOptions struct {
	Status   PetStatus // empty: any status
	PageSize int       // pets per request, 1 to 100; 0: the service's default (20)
}

// ListPets walks through every pet in ascending id order, a page at a time,
// following each page's Link rel="next" until the last page. Each page is a
// call with its own retries. On an error the walk yields it and stops.
func (c *Petstore) ListPets(ctx context.Context, opts ListOptions) iter.Seq2[Pet, error] {
	return func(yield func(Pet, error) bool) {
		params := &ListPetsParams{}
		if opts.Status != "" {
			params.Status = &opts.Status
		}
		if opts.PageSize != 0 {
			params.Limit = &opts.PageSize
		}
		var next *url.URL // nil: the first page, from params
		for {
			var editors []RequestEditorFn
			if next != nil {
				editors = append(editors, func(_ context.Context, req *http.Request) error {
					req.URL = next
					return nil
				})
			}
			resp, err := c.api.ListPetsWithResponse(ctx, params, editors...)
			if err != nil {
				yield(Pet{}, err)
				return
			}
			if resp.JSON200 == nil {
				yield(Pet{}, errorFrom(resp.HTTPResponse, resp.Body))
				return
			}
			for _, pet := range *resp.JSON200 {
				if !yield(pet, nil) {
					return
				}
			}
			link := nextLink(resp.HTTPResponse.Header.Values("Link"))
			if link == "" {
				return
			}
			if next, err = resp.HTTPResponse.Request.URL.Parse(link); err != nil {
				yield(Pet{}, fmt.Errorf("petstore client: Link %q: %w", link, err))
				return
			}
		}
	}
}

// CreatePet adds a pet. It sends a new Idempotency-Key and the same one on
// every retry, so that a create whose answer was lost is not made twice.
func (c *Petstore) CreatePet(ctx context.Context, pet NewPet) (Pet, error) {
	return c.CreatePetWithKey(ctx, NewIdempotencyKey(), pet)
}

// CreatePetWithKey is CreatePet with the caller's Idempotency-Key, for a
// caller that retries across its own restarts: the service answers every
// request with this key and body as it answered the first, for 24 hours.
func (c *Petstore) CreatePetWithKey(ctx context.Context, idempotencyKey string, pet NewPet) (Pet, error) {
	resp, err := c.api.CreatePetWithResponse(ctx, &CreatePetParams{IdempotencyKey: &idempotencyKey}, pet)
	if err != nil {
		return Pet{}, err
	}
	if resp.JSON201 == nil {
		return Pet{}, errorFrom(resp.HTTPResponse, resp.Body)
	}
	return *resp.JSON201, nil
}

// GetPet fetches one pet. getPet is deprecated (see the OpenAPI document):
// prefer ListPets.
func (c *Petstore) GetPet(ctx context.Context, id int64) (Pet, error) {
	resp, err := c.api.GetPetWithResponse(ctx, id)
	if err != nil {
		return Pet{}, err
	}
	if resp.JSON200 == nil {
		return Pet{}, errorFrom(resp.HTTPResponse, resp.Body)
	}
	return *resp.JSON200, nil
}

// NewIdempotencyKey returns a new random Idempotency-Key (128 bits, 26
// base32 characters).
func NewIdempotencyKey() string { return rand.Text() }
