package api

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/dataversion"
	"petstore/internal/idempotency"
	"petstore/internal/pets"
)

// handleListPets serves listPets: a page of pets, and the Link to the next,
// under petsURL, the address of listPets.
func handleListPets(reads *pets.Reads, version *dataversion.Watch, petsURL string) func(*core.RequestEvent) error {
	nextPage := "<" + petsURL + "?cursor="
	return func(e *core.RequestEvent) error {
		q, qerr := parseListQuery(e.Request.URL.RawQuery)
		if qerr != nil {
			return qerr
		}
		v, err := dataVersion(e, version)
		if err != nil {
			return err
		}
		page, err := reads.List(e.Request.Context(), v, q)
		if err != nil {
			return err
		}
		if page.Next != "" {
			e.Response.Header().Set("Link", nextPageLink(nextPage, q, page.Next))
		}
		return writeTaggedJSON(e, petsPageTag(v, q, page), page.JSON)
	}
}

// nextPageLink is the Link header of the page after the pet with id last:
// the same query from the next cursor (parameters in name order). prefix is
// the header up to the cursor's value.
func nextPageLink(prefix string, q pets.Query, last string) string {
	link := prefix + encodeCursor(last) + "&limit=" + strconv.Itoa(q.Limit)
	if q.Status != "" {
		link += "&status=" + q.Status
	}
	return link + `>; rel="next"`
}

// handleCreatePet serves createPet; the new pet's Location is under
// petsURL, the address of listPets. The pet is written by the pets writer,
// in a transaction with the creates that arrive with it; with an
// Idempotency-Key, its answer is stored in the same transaction (package
// idempotency). Without one, the path does nothing more than create the pet.
func handleCreatePet(writer *pets.Writer, petsURL string, o Observer) func(*core.RequestEvent) error {
	location := petLocation(petsURL + "/")
	return func(e *core.RequestEvent) error {
		defer writer.Expect()() // on its way while its body arrives and is checked
		if err := noQuery(e.Request.URL.RawQuery); err != nil {
			return err
		}
		idemKey, kerr := idempotency.KeyFrom(e.Request.Header)
		if kerr != nil {
			return idempotencyKeyError(kerr)
		}
		if err := requireJSONContentType(e.Request); err != nil {
			return err
		}
		body, err := readBody(e.Request)
		if err != nil {
			return err
		}
		if idemKey != "" {
			return createPetOnce(e, writer, location, idemKey, body, o)
		}

		np, derr := decodeNewPet(body)
		if derr != nil {
			return derr
		}
		pet, err := writer.Create(e.Request.Context(), np)
		if err != nil {
			return writeFailed(e, err)
		}
		e.Response.Header().Set("Location", location.of(pet))
		return writeJSON(e.Response, http.StatusCreated, pet)
	}
}

// createPetOnce is createPet for a request with an Idempotency-Key: the
// 201, or the 400 for the body, is remembered and replayed to retries. o,
// when not nil, counts what became of the key.
func createPetOnce(e *core.RequestEvent, writer *pets.Writer, location petLocation, idemKey string, body []byte, o Observer) error {
	scope, now := apiKeyID(e), time.Now()
	var (
		answer  idempotency.Answer
		outcome idempotency.Outcome
		bodyErr *Error
	)
	err := writer.Run(e.Request.Context(), func(tx *pets.Tx) (err error) {
		bodyErr = nil
		answer, outcome, err = idempotency.Do(e.Request.Context(), tx.App(), scope, idemKey, body, now,
			func(core.App) (idempotency.Answer, error) {
				np, derr := decodeNewPet(body)
				if derr != nil {
					bodyErr = derr
					data, err := EncodeJSON(derr)
					return idempotency.Answer{Status: derr.Status, Body: data}, err
				}
				pet, err := tx.Insert(np)
				if err != nil {
					return idempotency.Answer{}, err
				}
				data, err := EncodeJSON(pet)
				return idempotency.Answer{Status: http.StatusCreated, Body: data, Location: location.of(pet)}, err
			})
		return err
	})
	if o != nil && err == nil {
		o.ObserveIdempotency(idempotencyOutcome(outcome))
	}
	switch {
	case err != nil:
		return writeFailed(e, err)
	case outcome == idempotency.Reused:
		return newError(http.StatusUnprocessableEntity, CodeIdempotencyKeyReused,
			"This Idempotency-Key was used with another request body: use a new key for a new request.")
	case outcome == idempotency.Fresh && bodyErr != nil:
		return bodyErr
	case outcome == idempotency.Replayed:
		e.Response.Header().Set("Idempotent-Replayed", "true")
	}
	if answer.Location != "" {
		e.Response.Header().Set("Location", answer.Location)
	}
	return writeJSONBytes(e.Response, answer.Status, answer.Body)
}

// idempotencyOutcome is the metric's name of an outcome.
func idempotencyOutcome(o idempotency.Outcome) string {
	switch o {
	case idempotency.Replayed:
		return idempotencyReplayed
	case idempotency.Reused:
		return idempotencyConflict
	}
	return idempotencyStored
}

// petLocation is the address of each pet: the prefix of its id.
type petLocation string

func (l petLocation) of(p pets.Pet) string { return string(l) + strconv.FormatInt(p.ID, 10) }

func petNotFound(id string) *Error {
	return newError(http.StatusNotFound, CodeNotFound, "No pet with id %s.", id)
}

// handleGetPet serves the deprecated getPet.
func handleGetPet(reads *pets.Reads, version *dataversion.Watch) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		if err := noQuery(e.Request.URL.RawQuery); err != nil {
			return err
		}
		id, assignable, perr := parsePetID(e.Request.PathValue("petId"))
		if perr != nil {
			return perr
		}
		if !assignable {
			return petNotFound(id)
		}
		v, err := dataVersion(e, version)
		if err != nil {
			return err
		}
		body, err := reads.Get(e.Request.Context(), v, id)
		if errors.Is(err, pets.ErrNotFound) {
			return petNotFound(id)
		}
		if err != nil {
			return err
		}
		return writeTaggedJSON(e, petTag(v, id), body)
	}
}
