package client

import (
	"context"
	"crypto/rand"
	"net/http"
	"strconv"
)

// Pet is an animal as the service returns it.
type Pet struct {
	ID         int64  `json:"id"` // assigned by the service: 15 digits, growing with time
	Name       string `json:"name"`
	CategoryID int64  `json:"categoryId"`
	Status     Status `json:"status,omitempty"`
}

// NewPet is an animal to add. Name (1 to 100 characters once trimmed of
// surrounding spaces) and CategoryID (1 to 2^53-1) are required.
type NewPet struct {
	Name       string `json:"name"`
	CategoryID int64  `json:"categoryId"`
	Status     Status `json:"status,omitempty"` // empty: the service makes the pet Available
}

// Status is a pet's availability.
type Status string

// The statuses a pet can have.
const (
	Available Status = "available"
	Pending   Status = "pending"
	Sold      Status = "sold"
)

// CreatePet adds a pet and returns it as the service stored it, with what
// the answer told (Answer.Replayed: the pet was added by an earlier
// request with the same key). It sends a new Idempotency-Key, and the same
// one on every retry, so that a create whose answer was lost is made once.
//
// Errors: an *Error with CodeInvalidRequest when the service refuses the pet
// (Message says which field and rule), CodeUnauthorized for the API key,
// CodeInsufficientScope for a key without pets:write (nothing is added),
// CodeRateLimitExceeded or CodeAPIKeyBanned when the wait is longer than the
// call may wait (RetryAfter says how long), and any other code the service
// answers; an *Error without Code when the answer is not the API's; a
// network or context error when no answer came after the retries.
func (c *Client) CreatePet(ctx context.Context, pet NewPet, opts ...CallOption) (PetResult, error) {
	return c.CreatePetWithKey(ctx, NewIdempotencyKey(), pet, opts...)
}

// CreatePetWithKey is CreatePet with the caller's Idempotency-Key (1 to 255
// visible ASCII characters; NewIdempotencyKey makes one), for a caller that
// retries across its own restarts: for 24 hours the service answers every
// request with this key and this pet as it answered the first, and adds the
// pet once.
//
// Errors: those of CreatePet, and an *Error with CodeIdempotencyKeyReused
// when the key was used before with another pet (nothing is added), or
// CodeInvalidRequest when the key is malformed.
func (c *Client) CreatePetWithKey(ctx context.Context, idempotencyKey string, pet NewPet, opts ...CallOption) (PetResult, error) {
	var created Pet
	_, a, err := c.do(ctx, http.MethodPost, "pets", nil, pet, http.Header{"Idempotency-Key": {idempotencyKey}},
		http.StatusCreated, &created, func() bool { return created.ID > 0 }, opts)
	if err != nil {
		return PetResult{}, err
	}
	return PetResult{Pet: created, Answer: a}, nil
}

// GetPet fetches the pet with id, with what the answer told.
//
// Errors: an *Error with CodeNotFound when no pet has id, CodeGone from
// 5 December 2030, CodeUnauthorized for the API key, CodeInsufficientScope
// for a key without pets:read, CodeRateLimitExceeded or
// CodeAPIKeyBanned when the wait is longer than the call may wait; an *Error
// without Code when the answer is not the API's; a network or context error
// when no answer came after the retries.
//
// Deprecated: the service removes getPet on 5 December 2030, and from then
// GetPet fails with CodeGone. Use ListPets or ListPage, with a Status
// filter, instead.
func (c *Client) GetPet(ctx context.Context, id int64, opts ...CallOption) (PetResult, error) {
	var got Pet
	_, a, err := c.do(ctx, http.MethodGet, "pets/"+strconv.FormatInt(id, 10), nil, nil, nil,
		http.StatusOK, &got, func() bool { return got.ID > 0 }, opts)
	if err != nil {
		return PetResult{}, err
	}
	return PetResult{Pet: got, Answer: a}, nil
}

// NewIdempotencyKey returns a new random Idempotency-Key (128 bits, 26
// base32 characters).
func NewIdempotencyKey() string { return rand.Text() }
