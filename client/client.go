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

	"github.com/hashicorp/go-cleanhttp"
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
	// key's can be many minutes, a minute quota's up to 60 s); beyond it, or
	// beyond the context's deadline, the call returns the *Error at once,
	// with RetryAfter set, and the caller decides. Default 10 s
	// (DefaultMaxRetryAfter).
	MaxRetryAfter time.Duration
	// OnWait, when set, is called before each wait between two attempts of
	// a call, on the calling goroutine, with what the call waits for and
	// why: to log it, or to show it to someone waiting.
	OnWait func(Wait)
}

// DefaultMaxRetryAfter is Options.MaxRetryAfter's default: a call waits out
// the end of a minute window when little of it is left, but never holds its
// caller much longer than a slow request would; a longer Retry-After comes
// back to the caller, who knows whether waiting is worth it.
const DefaultMaxRetryAfter = 10 * time.Second

// A Wait is one wait of a call before its next attempt, as Options.OnWait
// sees it.
type Wait struct {
	Method string // the request's method
	URL    string // the request's URL, any password in it redacted
	// Attempt is the attempt that failed, from 1; the next one is
	// Attempt+1.
	Attempt int
	Delay   time.Duration // how long the call waits now
	// StatusCode is the failed attempt's status (429 or 503), or 0 when no
	// answer came (Err says why).
	StatusCode int
	// RetryAfter tells that Delay is the answer's Retry-After, not a
	// backoff of the client's choosing.
	RetryAfter bool
	Err        error // the network error, when no answer came
}

// Client is a client of one petstore service for one API key. It is safe for
// concurrent use.
type Client struct {
	base   string // the base URL with a final "/", which the request builders resolve "./pets" against
	apiKey string
	http   *http.Client
	policy policy
	onWait func(Wait)
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
	hc := opts.HTTPClient
	if hc == nil {
		hc = cleanhttp.DefaultPooledClient()
	}
	return &Client{base: u.String() + "/", apiKey: apiKey, http: hc, policy: newPolicy(opts), onWait: opts.OnWait}, nil
}

// retrier is the retry loop of one call: a retryablehttp.Client of its own,
// so that the wait it reports names the call's request and the error that
// caused it. It shares the Client's *http.Client and so its connections.
func (c *Client) retrier(req *http.Request) *retryablehttp.Client {
	var lastErr error
	return &retryablehttp.Client{
		HTTPClient:   c.http,
		RetryWaitMin: c.policy.minBackoff,
		RetryWaitMax: c.policy.maxBackoff,
		RetryMax:     c.policy.maxAttempts - 1,
		CheckRetry: func(ctx context.Context, resp *http.Response, err error) (bool, error) {
			lastErr = err
			return c.policy.checkRetry(ctx, resp, err)
		},
		Backoff: func(minWait, maxWait time.Duration, attempt int, resp *http.Response) time.Duration {
			wait, fromHeader := c.policy.backoff(minWait, maxWait, attempt, resp)
			if c.onWait != nil {
				w := Wait{Method: req.Method, URL: req.URL.Redacted(), Attempt: attempt + 1, Delay: wait, RetryAfter: fromHeader}
				if resp != nil {
					w.StatusCode = resp.StatusCode
				} else {
					w.Err = lastErr
				}
				c.onWait(w)
			}
			return wait
		},
		// The last answer goes back as it came, to be read as an Error,
		// instead of retryablehttp's "giving up" error.
		ErrorHandler: retryablehttp.PassthroughErrorHandler,
	}
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
	requestID *string
}

// ReportRateLimit makes the call store in *rl the rate-limit state of its
// final answer, success or refusal (a zero RateLimit when no answer came).
// ListPets and ListCategories store it after each page.
func ReportRateLimit(rl *RateLimit) CallOption { return CallOption{rateLimit: rl} }

// ReportRequestID makes the call store in *id the Request-Id of its final
// answer, success or refusal: the request's name in the service's logs, to
// quote when asking about a call that succeeded ("" when no answer came).
// ListPets and ListCategories store it after each page. A refusal's
// Error.RequestID holds the same.
func ReportRequestID(id *string) CallOption { return CallOption{requestID: id} }

// answer is what a call's final answer tells besides its body, for the
// CallOptions to report.
type answer struct {
	rateLimit RateLimit
	requestID string
}

func report(opts []CallOption, a answer) {
	for _, o := range opts {
		if o.rateLimit != nil {
			*o.rateLimit = a.rateLimit
		}
		if o.requestID != nil {
			*o.requestID = a.requestID
		}
	}
}

// maxAnswerBytes bounds the body read from an answer: the largest the API
// sends, a page of 100 pets, is under 64 KiB.
const maxAnswerBytes = 1 << 20

// do sends req, built by package gen, with the key and the retry policy,
// and decodes an answer with status want into out, which valid then checks.
// Any other answer is an *Error; one that is not the API's JSON says so.
func (c *Client) do(ctx context.Context, req *http.Request, want int, out any, valid func() bool) (*http.Response, answer, error) {
	req = req.WithContext(ctx)
	req.Header.Set("Authorization", "Bearer "+c.apiKey)
	req.Header.Set("Accept", "application/json")
	r, err := retryablehttp.FromRequest(req)
	if err != nil {
		return nil, answer{}, err
	}
	resp, err := c.retrier(req).Do(r)
	if err != nil {
		return nil, answer{}, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxAnswerBytes+1))
	if err != nil {
		return nil, answer{}, fmt.Errorf("petstore client: %s %s: reading the answer: %w", req.Method, req.URL.Redacted(), err)
	}
	a := answer{rateLimit: parseRateLimit(resp.Header, time.Now()), requestID: resp.Header.Get("Request-Id")}
	if resp.StatusCode != want {
		return resp, a, c.errorFrom(resp, body, a.rateLimit)
	}
	if !isJSON(resp.Header) || len(body) > maxAnswerBytes || json.Unmarshal(body, out) != nil || !valid() {
		return resp, a, c.notTheAPI(resp, body, a.rateLimit)
	}
	return resp, a, nil
}

func isJSON(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "application/json"
}
