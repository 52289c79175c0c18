package client

import (
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// Version is this client's version, which its User-Agent names
// (petstore-go/Version).
const Version = "0.4.0"

// The defaults of Options.AttemptTimeout and Options.Timeout: an attempt
// that has not answered in 30 s is abandoned and retried, and a call gives
// up after 80 s (Stripe's SDKs' per-request bound), its waits included,
// whatever its context allows.
const (
	DefaultAttemptTimeout = 30 * time.Second
	DefaultTimeout        = 80 * time.Second
)

// Options configure a Client; zero values take the defaults.
type Options struct {
	// HTTPClient sends each attempt. Default: a client with pooled
	// connections (a clone of http.DefaultTransport) and no timeout of its
	// own: AttemptTimeout and Timeout bound the calls.
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
	// beyond the call's deadline, the call returns the *Error at once,
	// with RetryAfter set, and the caller decides. Default 10 s
	// (DefaultMaxRetryAfter).
	MaxRetryAfter time.Duration
	// AttemptTimeout bounds one attempt, from sending the request to the
	// end of the answer's body; an attempt past it is abandoned and, if the
	// call has time and attempts left, retried. Default 30 s
	// (DefaultAttemptTimeout); negative: no bound but the call's.
	AttemptTimeout time.Duration
	// Timeout bounds a whole call, its attempts and waits included (a
	// ListPets walk: each page), unless the call's context ends sooner.
	// Past it the call returns a *TimeoutError. Default 80 s
	// (DefaultTimeout); negative: the context alone bounds the call.
	Timeout time.Duration
	// UserAgent, when set, names the caller's program before the client's
	// own "petstore-go/<Version>" in the User-Agent header.
	UserAgent string
	// Header holds headers sent with every request, unless a call's
	// WithHeader sets the same one. The client's own (Authorization,
	// Accept, Content-Type, Idempotency-Key) cannot be changed here.
	Header http.Header
	// OnWait, when set, is called before each wait between two attempts of
	// a call, on the calling goroutine, with what the call waits for and
	// why: to log it, or to show it to someone waiting.
	OnWait func(Wait)
	// RevalidationEntries bounds the answers the client keeps to revalidate:
	// the latest 200 with an ETag of each address it GETs (a page of pets,
	// a pet, a page of categories). The next call of a kept address sends
	// If-None-Match, and when the service answers 304 Not Modified, the
	// call returns what the kept body holds, with Answer.StatusCode 304 and
	// the 304's rate-limit state and Request-Id. Default 128
	// (DefaultRevalidationEntries), the least recently used dropped first;
	// negative: none kept, every call gets a whole answer.
	RevalidationEntries int
	// OnAttempt, when set, is called after each attempt of every call, on
	// the calling goroutine, with its outcome: the client-wide hook for
	// logging and metrics. The URL has any password redacted; the API key
	// is in no field.
	OnAttempt func(Attempt)
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
	// StatusCode is the failed attempt's status (429, 500, 502, 503 or 504), or
	// 0 when no answer came (Err says why).
	StatusCode int
	// RetryAfter tells that Delay is the answer's Retry-After, not a
	// backoff of the client's choosing.
	RetryAfter bool
	Err        error // the network error, when no answer came
}

// An Attempt is one attempt of a call, as Options.OnAttempt sees it.
type Attempt struct {
	Method   string        // the request's method
	URL      string        // the request's URL, any password in it redacted
	Attempt  int           // from 1
	Duration time.Duration // from sending to the end of the answer, or to the failure
	// StatusCode is the answer's status, 0 when none came (Err says why).
	StatusCode int
	RequestID  string // the answer's Request-Id, "" when none came
	Err        error  // the network or timeout error, when no answer came
}

// Client is a client of one petstore service for one API key. It is safe for
// concurrent use.
type Client struct {
	base      *url.URL // the base URL with a final "/", which "pets" and "categories" resolve against
	apiKey    string
	http      *http.Client
	policy    policy
	userAgent string
	header    http.Header
	onWait    func(Wait)
	onAttempt func(Attempt)
	answers   *keptAnswers // nil: none kept (Options.RevalidationEntries)
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
		hc = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	u.Path += "/"
	if u.RawPath != "" {
		u.RawPath += "/"
	}
	ua := "petstore-go/" + Version
	if opts.UserAgent != "" {
		ua = opts.UserAgent + " " + ua
	}
	return &Client{base: u, apiKey: apiKey, http: hc, policy: newPolicy(opts), userAgent: ua,
		header: opts.Header.Clone(), onWait: opts.OnWait, onAttempt: opts.OnAttempt, answers: newKeptAnswers(opts.RevalidationEntries)}, nil
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

// A CallOption changes one call, or asks it for more than its result.
type CallOption struct {
	apply func(*callConfig)
}

// callConfig is one call's settings: the Client's, changed by its
// CallOptions.
type callConfig struct {
	policy  policy
	header  http.Header
	reports []func(Answer)
}

// ReportAnswer makes the call store in *a what its final answer told
// besides its value, success or refusal: for the walks, ListPets and
// ListCategories, whose values come from many answers, it stores each
// page's before yielding the page's values. The other calls return it with
// their value (PetResult.Answer, UsageResult.Answer, Page.Answer), and a
// refusal's *Error carries the same; here it is stored too.
func ReportAnswer(a *Answer) CallOption {
	return CallOption{apply: func(c *callConfig) { c.reports = append(c.reports, func(got Answer) { *a = got }) }}
}

// WithHeader sends the header name with value on this call, over the
// Client's Options.Header. The client's own headers (Authorization, Accept,
// Content-Type, Idempotency-Key) cannot be changed.
func WithHeader(name, value string) CallOption {
	return CallOption{apply: func(c *callConfig) {
		if c.header == nil {
			c.header = http.Header{}
		}
		c.header.Set(name, value)
	}}
}

// WithTimeout bounds this call as Options.Timeout bounds every call
// (negative: the context alone).
func WithTimeout(d time.Duration) CallOption {
	return CallOption{apply: func(c *callConfig) { c.policy.timeout = d }}
}

// WithAttemptTimeout bounds each attempt of this call as
// Options.AttemptTimeout bounds every attempt (negative: no bound but the
// call's).
func WithAttemptTimeout(d time.Duration) CallOption {
	return CallOption{apply: func(c *callConfig) { c.policy.attemptTimeout = d }}
}

// WithMaxAttempts bounds the attempts of this call, the first included: 1
// retries nothing.
func WithMaxAttempts(n int) CallOption {
	return CallOption{apply: func(c *callConfig) {
		if n > 0 {
			c.policy.maxAttempts = n
		}
	}}
}

// config is the settings of a call with opts.
func (c *Client) config(opts []CallOption) callConfig {
	cfg := callConfig{policy: c.policy, header: c.header.Clone()}
	for _, o := range opts {
		if o.apply != nil {
			o.apply(&cfg)
		}
	}
	return cfg
}

// PetResult is a pet a call returned, with what its answer told besides
// it. It encodes to JSON as the Pet alone.
type PetResult struct {
	Pet
	Answer Answer `json:"-"`
}

// UsageResult is the usage GetUsage returned, with what its answer told
// besides it. It encodes to JSON as the Usage alone.
type UsageResult struct {
	Usage
	Answer Answer `json:"-"`
}

// Answer is what a call's final answer tells besides its value: its request
// id, whether it was a replay, its rate-limit state, its headers and how
// many attempts the call took.
type Answer struct {
	// StatusCode is the answer's status: 304 when the service confirmed
	// the answer the client kept (Options.RevalidationEntries), whose body
	// the call then used.
	StatusCode int
	// RequestID is the answer's Request-Id: the request's name in the
	// service's logs, to quote when asking about a call.
	RequestID string
	// Replayed is true when a create's answer is the one the service
	// stored for its Idempotency-Key (Idempotent-Replayed: true): the pet
	// was added by an earlier request with that key, not by this one.
	Replayed  bool
	RateLimit RateLimit   // the rate-limit state the answer reported
	Header    http.Header // all the answer's headers
	Attempts  int         // the attempts the call made, the first included
}

func (cfg callConfig) report(a Answer) {
	for _, r := range cfg.reports {
		r(a)
	}
}

func isJSON(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// endpoint is the URL of the operation at path (relative: "pets") with
// query.
func (c *Client) endpoint(path string, query url.Values) *url.URL {
	u := c.base.ResolveReference(&url.URL{Path: path})
	u.RawQuery = query.Encode()
	return u
}

// timeoutContext is ctx bounded by d when d > 0.
func timeoutContext(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d > 0 {
		return context.WithTimeout(ctx, d)
	}
	return context.WithCancel(ctx)
}
