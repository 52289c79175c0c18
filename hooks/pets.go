package hooks

import (
	"database/sql"
	"errors"
	"net/http"
	"net/url"
	"strconv"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
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

// handleCreatePet serves createPet.
func handleCreatePet(e *core.RequestEvent) error {
	if err := noQuery(e.Request.URL.RawQuery); err != nil {
		return err
	}
	if err := requireJSONContentType(e.Request); err != nil {
		return err
	}
	body, err := readBody(e.Request)
	if err != nil {
		return err
	}
	np, derr := decodeNewPet(body)
	if derr != nil {
		return derr
	}

	collection, err := e.App.FindCachedCollectionByNameOrId(petsCollection)
	if err != nil {
		return err
	}
	r := core.NewRecord(collection)
	r.Set("name", np.Name)
	r.Set("categoryId", np.CategoryID)
	r.Set("status", np.Status) // empty: the pets record hook makes it "available"
	if err := e.App.Save(r); err != nil {
		return err
	}

	pet := petFromRecord(r)
	e.Response.Header().Set("Location", "/v1/pets/"+r.Id)
	return writeJSON(e.Response, http.StatusCreated, pet)
}

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
