// Package client is a Go client of the petstore API (/v1): it lists, adds
// and fetches pets, pages with cursors that resume, retries what is safe to
// retry, and reports the rate-limit state of each call.
//
// This program adds a pet and lists the sold ones, reading the service's
// base URL and an API key from PETSTORE_URL and PETSTORE_KEY (in a
// main function; Example runs it):
//
//	c, err := client.New(os.Getenv("PETSTORE_URL"), os.Getenv("PETSTORE_KEY"), client.Options{})
//	if err != nil {
//		log.Fatal(err) // a base URL that does not end in /v1, or an empty key
//	}
//	// The deadline bounds every call, its retries and waits included.
//	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
//	defer cancel()
//
//	rex, err := c.CreatePet(ctx, client.NewPet{Name: "Rex", CategoryID: 1})
//	if err != nil {
//		log.Fatal(err)
//	}
//	fmt.Println("added", rex.Name, rex.Status)
//
//	// Every sold pet, page after page.
//	for pet, err := range c.ListPets(ctx, client.ListOptions{Status: client.Sold}) {
//		if err != nil {
//			log.Fatal(err)
//		}
//		fmt.Println("sold:", pet.Name)
//	}
//
// A Client is safe for concurrent use. Every call takes a context: its
// deadline bounds the call's attempts and the waits between them, as do the
// client's own timeouts. Every request names the client in User-Agent
// (petstore-go/Version). A call's value comes with its answer's request id,
// replay, rate-limit state and headers: CreatePet and GetPet return a
// PetResult (the Pet and its Answer), GetUsage a UsageResult, ListPage a
// Page with its Answer; the walks store each page's where ReportAnswer says.
//
// # Paging
//
// Pets come in ascending ID order, a page at a time. ListPets walks through
// every page as an iterator; ListPage fetches one, with the cursor of the
// next in Page.Next. A walk can start at a cursor (ListOptions.Cursor), and
// a walk that fails reports where to resume: its error is a *ListError
// whose Cursor starts the walk again at the first pet it did not yield.
// Resuming misses no pet and repeats none, and a walk visits every pet that
// existed when it began, even while others are added.
//
// ListCategories walks the named categories (the names of the numbers pets
// carry as CategoryID) page after page too, but without a cursor: an error
// ends the walk as it is, not as a *ListError, and a new walk starts from
// the first category (a store has few). The operation is beta.
//
// The client reads the cursor from the service's Link header, whether its
// target is absolute or relative, and asks its own base URL for the next
// page: paging works behind a gateway that serves the API under another
// path, and the API key goes to no other address.
//
// # Revalidation
//
// The service tags its answers to ListPage, ListPets, GetPet and
// ListCategories with an ETag. The client keeps the latest tagged answer
// of each address (Options.RevalidationEntries, 128 by default) and sends
// If-None-Match on the next call there; on 304 Not Modified, the call
// returns what the kept body holds, and Answer.StatusCode is 304. A 304
// counts against the key like a 200: it saves bytes, not quota.
//
// # Timeouts and retries
//
// Each attempt is bounded by Options.AttemptTimeout (30 s by default) and
// each call, its waits included, by Options.Timeout (80 s) or its
// context's deadline, whichever comes first; past either, the call returns
// a *TimeoutError. WithTimeout and WithAttemptTimeout change them for one
// call.
//
// A call retries network errors (except those a retry cannot mend, such
// as an untrusted certificate), attempts that time out, and 429, 500, 502,
// 503 and 504: a GET always, a POST only with an Idempotency-Key (CreatePet
// always sends one; the service stores no 500 for a key, so a retried
// create after one is made once). At most Options.MaxAttempts attempts in all
// (WithMaxAttempts for one call). It waits for Retry-After when the answer
// has one, otherwise a random time between 0 and
// min(MaxBackoff, MinBackoff × 2^attempt) ("full jitter"). It does not wait
// for a Retry-After longer than Options.MaxRetryAfter (10 s by default) or
// ending after the call's deadline: it returns the *Error at once, with
// RetryAfter set. Options.OnWait hears of every wait, and why, and
// Options.OnAttempt of every attempt. Other answers are not retried: a 4xx
// will not change.
//
// # Idempotency
//
// CreatePet sends a new Idempotency-Key and the same key on each retry of
// that call: a create whose answer was lost on the way back is retried, and
// the service answers with the pet the first attempt made instead of adding
// a second. CreatePetWithKey takes the caller's key (NewIdempotencyKey makes
// one), for a caller that retries across its own restarts: the service
// remembers a key's answer for 24 hours. The same key with another pet is
// refused with CodeIdempotencyKeyReused.
//
// # Errors
//
// Each method's documentation lists its errors. An answer a call cannot use
// is an *Error: the service's refusals have a Code from the catalogue
// (CodeInvalidRequest, CodeNotFound, ...) and the service's Message; an
// answer that is not the API's (a proxy's error page, or the page a wrong
// base URL leads to) has no Code, and its Message says what came and asks
// about the base URL when that is the likely cause. An *Error carries the
// answer's headers and the attempts made. When no answer came, the error is
// a *NetworkError or, past a deadline, a *TimeoutError, each with the
// attempts made and the last request id seen. Match them with errors.As
// and errors.Is:
//
//	var e *client.Error
//	if errors.As(err, &e) && e.Code == client.CodeRateLimitExceeded {
//		log.Printf("still limited after the retries; try again in %v", e.RetryAfter)
//	}
//
// New refuses a base URL that does not end in /v1, the version segment, so
// that a missing segment is not met later as a puzzling 404.
//
// # Rate limits
//
// Each key has quotas per minute and per day, and every answer reports
// their state. A RateLimit holds it, parsed: the binding window's Limit,
// Remaining and Reset, and every window with its quota, period, remaining
// requests and reset. A value carries it in its Answer.RateLimit, a walk
// stores each page's where ReportAnswer says, and a refusal carries it in
// Error.RateLimit:
//
//	created, err := c.CreatePet(ctx, pet)
//	if rl := created.Answer.RateLimit; err == nil && rl.Remaining < 10 {
//		log.Printf("%d requests left until %v", rl.Remaining, rl.Reset)
//	}
//
// # Request ids
//
// The service names every request in its logs and answers with the name in
// Request-Id. An *Error carries it in RequestID, and its message ends with
// it ("(request 4f0c…)"); a call that succeeded returns it in its value's
// Answer.RequestID. Quote it when asking the service's operators about a
// call:
//
//	pet, err := c.CreatePet(ctx, newPet)
//	if err == nil {
//		log.Printf("added pet %d (request %s)", pet.ID, pet.Answer.RequestID)
//	}
package client
