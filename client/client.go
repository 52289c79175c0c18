package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"
)

// Options configure a Client; zero values take the defaults.
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

// Client is a client of one petstore service for one API key. It is safe for
// concurrent use.
type Client struct {
	base   string // the base URL with a final "/", which the request builders resolve "./pets" against
	apiKey string
	http   *retryablehttp.Client
}

// New returns a client of the service whose base URL is baseURL, the address
// of the API's version segment (https://petstore.example.com/v1, or
// https://shop.example.org/api/v1 behind a gateway), sending apiKey as its
// bearer token.
//
// It refuses, with an error that says why, a base URL that is not an
// absolute http(s) URL, has a query or fragment, or does not end in /v1, and
// an empty apiKey. It sends no request.
func New(baseURL, apiKey string, opts Options) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("petstore client: base URL %q is not an absolute http(s) URL", baseURL)
	}
	if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
		return nil, fmt.Errorf("petstore client: base URL %q has a query or a fragment; it is the address of the API's version segment, such as %s", baseURL, withV1(u))
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = strings.TrimSuffix(u.RawPath, "/")
	if !strings.HasSuffix(u.Path, "/v1") {
		return nil, fmt.Errorf("petstore client: base URL %q does not end in /v1; it is the address of the API's version segment, such as %s", baseURL, withV1(u))
	}
	if apiKey == "" {
		return nil, errors.New("petstore client: the API key is empty")
	}
	p := newPolicy(opts)
	return &Client{
		base:   u.String() + "/",
		apiKey: apiKey,
		http: &retryablehttp.Client{
			HTTPClient:   opts.HTTPClient,
			RetryWaitMin: p.minBackoff,
			RetryWaitMax: p.maxBackoff,
			RetryMax:     p.maxAttempts - 1,
			CheckRetry:   p.checkRetry,
			Backoff:      p.backoff,
			// The last answer goes back as it came, to be read as an
			// Error, instead of retryablehttp's "giving up" error.
			ErrorHandler: retryablehttp.PassthroughErrorHandler,
		},
	}, nil
}

// withV1 is the base URL to suggest for u in an error: u up to its /v1
// segment when it has one (an operation's address), else with /v1 appended.
func withV1(u *url.URL) string {
	s := *u
	s.RawQuery, s.ForceQuery, s.Fragment, s.RawFragment, s.RawPath = "", false, "", "", ""
	if i := strings.Index(s.Path+"/", "/v1/"); i >= 0 {
		s.Path = s.Path[:i+len("/v1")]
	} else {
		s.Path = strings.TrimSuffix(s.Path, "/") + "/v1"
	}
	return s.String()
}

// A CallOption asks one call for more than its result.
type CallOption struct {
	rateLimit *RateLimit
}

// ReportRateLimit makes the call store in *rl the rate-limit state of its
// final answer, success or refusal (a zero RateLimit when no answer came).
// ListPets stores it after each page.
func ReportRateLimit(rl *RateLimit) CallOption { return CallOption{rateLimit: rl} }

func report(opts []CallOption, rl RateLimit) {
	for _, o := range opts {
		if o.rateLimit != nil {
			*o.rateLimit = rl
		}
	}
}

// maxAnswerBytes bounds the body read from an answer: the largest the API
// sends, a page of 100 pets, is under 64 KiB.
const maxAnswerBytes = 1 << 20

// do sends req, built by package gen, with the key and the retry policy,
// and decodes an answer with status want into out, which valid then checks.
// Any other answer is an *Error; one that is not the API's JSON says so.
func (c *Client) do(ctx context.Context, req *http.Request, want int, out any, valid func() bool) (*http.Response, RateLimit, error) {
	req = req.WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("Accept", "application/json")
	r, err := retryablehttp.FromRequest(req)
	if err != nil {
		return nil, RateLimit{}, err
	}
	resp, err := c.http.Do(r)
	if err != nil {
		return nil, RateLimit{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, RateLimit{}, fmt.Errorf("petstore client: %s %s: reading the answer: %w", req.Method, req.URL.Redacted(), err)
	}
	rl := parseRateLimit(resp.Header, time.Now())
	if resp.StatusCode != want {
		return resp, rl, c.errorFrom(resp, body, rl)
	}
	if !isJSON(resp.Header) || len(body) > maxAnswerBytes || json.Unmarshal(body, out) != nil || !valid() {
		return resp, rl, c.notTheAPI(resp, body, rl)
	}
	return resp, rl, nil
}

func isJSON(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "application/json"
}
