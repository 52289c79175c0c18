package hooks

import (
	"database/sql"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/idempotency"
)

const petsCollection = "pets"

// Pet is the spec's Pet. The record id is the pet's numeric id.
type Pet struct {
	ID         int64  `json:"id"`
	Name       string `json:"name"`
	CategoryID int64  `json:"categoryId"`
	Status     string `json:"status,omitempty"`
}

func petFromRecord(r *core.Record) Pet {
	id, _ := strconv.ParseInt(r.Id, 10, 64) // the id pattern guarantees 15 digits
	return Pet{
		ID:         id,
		Name:       r.GetString("name"),
		CategoryID: int64(r.GetInt("categoryId")),
		Status:     r.GetString("status"),
	}
}

// handleListPets serves listPets: pets in ascending id order, a page at a
// time. Ids never change, so walking the pages with the cursor (the last id
// seen) visits every pet that existed when the walk began exactly once, even
// while others are added.
func handleListPets(e *core.RequestEvent) error {
	q, qerr := parseListQuery(e.Request.URL.RawQuery)
	if qerr != nil {
		return qerr
	}

	query := e.App.RecordQuery(petsCollection).
		AndWhere(dbx.NewExp("[[id]] > {:after}", dbx.Params{"after": q.after})).
		OrderBy("id ASC").
		Limit(int64(q.limit) + 1) // one more tells whether there is a next page
	if q.status != "" {
		query.AndWhere(dbx.HashExp{"status": q.status})
	}
	var records []*core.Record
	if err := query.All(&records); err != nil {
		return err
	}

	if len(records) > q.limit {
		records = records[:q.limit]
		next := url.Values{"limit": {strconv.Itoa(q.limit)}, "cursor": {encodeCursor(records[q.limit-1].Id)}}
		if q.status != "" {
			next.Set("status", q.status)
		}
		e.Response.Header().Set("Link", `</v1/pets?`+next.Encode()+`>; rel="next"`)
	}

	pets := make([]Pet, len(records))
	for i, r := range records {
		pets[i] = petFromRecord(r)
	}
	return writeJSON(e.Response, http.StatusOK, pets)
}

// handleCreatePet serves createPet. With an Idempotency-Key, the pet and the
// answer are stored in one transaction (package idempotency); without one,
// the path does nothing more than create the pet.
func handleCreatePet(e *core.RequestEvent) error {
	if err := noQuery(e.Request.URL.RawQuery); err != nil {
		return err
	}
	idemKey, kerr := idempotency.KeyFrom(e.Request.Header)
	if kerr != nil {
		return invalidRequest("%s", kerr.Error())
	}
	if err := requireJSONContentType(e.Request); err != nil {
		return err
	}
	body, err := readBody(e.Request)
	if err != nil {
		return err
	}
	if idemKey != "" {
		return createPetOnce(e, idemKey, body)
	}

	np, derr := decodeNewPet(body)
	if derr != nil {
		return derr
	}
	pet, err := createPet(e.App, np)
	if err != nil {
		return err
	}
	e.Response.Header().Set("Location", petLocation(pet))
	return writeJSON(e.Response, http.StatusCreated, pet)
}

// createPetOnce is createPet for a request with an Idempotency-Key: the
// 201, or the 400 for the body, is remembered and replayed to retries.
func createPetOnce(e *core.RequestEvent, idemKey string, body []byte) error {
	var bodyErr *Error
	answer, outcome, err := idempotency.Do(e.App, apiKeyID(e), idemKey, body, time.Now(),
		func(tx core.App) (idempotency.Answer, error) {
			np, derr := decodeNewPet(body)
			if derr != nil {
				bodyErr = derr
				data, err := encodeJSON(derr)
				return idempotency.Answer{Status: derr.Status, Body: data}, err
			}
			pet, err := createPet(tx, np)
			if err != nil {
				return idempotency.Answer{}, err
			}
			data, err := encodeJSON(pet)
			return idempotency.Answer{Status: http.StatusCreated, Body: data, Location: petLocation(pet)}, err
		})
	switch {
	case err != nil:
		return err
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

func createPet(app core.App, np NewPet) (Pet, error) {
	collection, err := app.FindCachedCollectionByNameOrId(petsCollection)
	if err != nil {
		return Pet{}, err
	}
	r := core.NewRecord(collection)
	r.Set("name", np.Name)
	r.Set("categoryId", np.CategoryID)
	r.Set("status", np.Status) // empty: the pets record hook makes it "available"
	if err := app.Save(r); err != nil {
		return Pet{}, err
	}
	return petFromRecord(r), nil
}

func petLocation(p Pet) string { return "/v1/pets/" + strconv.FormatInt(p.ID, 10) }

// handleGetPet serves the deprecated getPet.
func handleGetPet(e *core.RequestEvent) error {
	if err := noQuery(e.Request.URL.RawQuery); err != nil {
		return err
	}
	id, perr := parsePetID(e.Request.PathValue("petId"))
	if perr != nil {
		return perr
	}
	r, err := e.App.FindRecordById(petsCollection, id)
	if errors.Is(err, sql.ErrNoRows) {
		return newError(http.StatusNotFound, CodeNotFound, "No pet with id %s.", id)
	}
	if err != nil {
		return err
	}
	return writeJSON(e.Response, http.StatusOK, petFromRecord(r))
}
