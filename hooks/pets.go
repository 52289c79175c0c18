package hooks

import (
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/dataversion"
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

// petReads are listPets' and getPet's queries, each prepared once on the
// read pool (SQLite parses a statement once per pooled connection, not once
// per request), reading plain rows: no core.Record, no record hooks, which
// only matter when a pet is saved. Every answer is the database's state at
// the request: read, or kept since the database last changed (pages and pets,
// below). They take no context: a page of rows is not worth interrupting, and
// a cancellable context costs database/sql and the driver a goroutine per
// query.
type petReads struct {
	list, listByStatus, get *sql.Stmt
	// pages are listPets' answers and pets getPet's (bodies by id), kept
	// while the database does not change (package dataversion): any commit,
	// by any connection of any process, drops them all before the next
	// request reads one, so an answer is never older than the request that
	// gets it.
	pages *dataversion.Cache[listPage]
	pets  *dataversion.Cache[[]byte]
	// version is the Watch the caches are read at (see dataVersion).
	version *dataversion.Watch
}

// listPage is a listPets answer: its body and Link header.
type listPage struct {
	body []byte
	link string
}

// maxCachedPages bounds the pages kept: at most about 7 KB each (100 pets).
// maxCachedPets bounds getPet's answers kept: about 100 bytes each.
const (
	maxCachedPages = 1024
	maxCachedPets  = 16384
)

// The id column is text of 15 digits: text order is numeric order, and the
// primary key (or idx_pets_status_id with a status) serves the page in order.
// The list has no LIMIT: SQLite produces the rows one step at a time, and
// the handler stops after the page. A bound LIMIT would make SQLite compile
// the statement again on every run (a bound value it may plan by), which
// costs a third of the query.
const (
	petColumns          = "id, name, CAST(categoryId AS INTEGER), status FROM pets"
	listPetsSQL         = "SELECT " + petColumns + " WHERE id > :after ORDER BY id"
	listPetsByStatusSQL = "SELECT " + petColumns + " WHERE status = :status AND id > :after ORDER BY id"
	getPetSQL           = "SELECT " + petColumns + " WHERE id = :id"
)

// preparePetReads prepares the reads on db, the app's read pool
// (app.ConcurrentDB()). The statements live as long as db.
func preparePetReads(db *sql.DB, version *dataversion.Watch) (*petReads, error) {
	r := petReads{
		pages:   dataversion.NewCache[listPage](maxCachedPages),
		pets:    dataversion.NewCache[[]byte](maxCachedPets),
		version: version,
	}
	for _, q := range []struct {
		stmt **sql.Stmt
		sql  string
	}{{&r.list, listPetsSQL}, {&r.listByStatus, listPetsByStatusSQL}, {&r.get, getPetSQL}} {
		stmt, err := db.Prepare(q.sql)
		if err != nil {
			return nil, fmt.Errorf("prepare the pets reads: %w", err)
		}
		*q.stmt = stmt
	}
	return &r, nil
}

// scanPet reads a row of petColumns. The id pattern guarantees 15 digits.
func scanPet(row interface{ Scan(...any) error }) (Pet, string, error) {
	var p Pet
	var id string
	if err := row.Scan(&id, &p.Name, &p.CategoryID, &p.Status); err != nil {
		return p, "", err
	}
	p.ID, _ = strconv.ParseInt(id, 10, 64)
	return p, id, nil
}

// scanPage reads up to limit+1 pets (one more tells whether there is a next
// page) and closes rows, giving its connection back before the response is
// written. lastID is the id of the page's last pet.
func scanPage(rows *sql.Rows, limit int) (pets []Pet, lastID string, err error) {
	defer rows.Close()
	pets = make([]Pet, 0, limit+1)
	for len(pets) <= limit && rows.Next() {
		p, id, err := scanPet(rows)
		if err != nil {
			return nil, "", err
		}
		if len(pets) < limit {
			lastID = id
		}
		pets = append(pets, p)
	}
	return pets, lastID, rows.Err()
}

// handleListPets serves listPets: pets in ascending id order, a page at a
// time. Ids never change, so walking the pages with the cursor (the last id
// seen) visits every pet that existed when the walk began exactly once, even
// while others are added.
func handleListPets(reads *petReads) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		q, qerr := parseListQuery(e.Request.URL.RawQuery)
		if qerr != nil {
			return qerr
		}
		version, err := dataVersion(e, reads.version)
		if err != nil {
			return err
		}
		page, err := listPetsPage(reads, version, q)
		if err != nil {
			return err
		}
		if page.link != "" {
			e.Response.Header().Set("Link", page.link)
		}
		return writeJSONBytes(e.Response, http.StatusOK, page.body)
	}
}

// listPetsPage is the page q asks for: kept, or read and kept.
func listPetsPage(reads *petReads, version int64, q listQuery) (listPage, error) {
	pageKey := q.status + "\x00" + q.after + "\x00" + strconv.Itoa(q.limit)
	page, ok := reads.pages.Get(version, pageKey)
	if ok {
		return page, nil
	}
	after := sql.Named("after", q.after)
	var rows *sql.Rows
	var err error

	if q.status == "" {
		rows, err = reads.list.Query(after)
	} else {
		rows, err = reads.listByStatus.Query(sql.Named("status", q.status), after)
	}
	if err != nil {
		return page, err
	}
	pets, lastID, err := scanPage(rows, q.limit)
	if err != nil {
		return page, err
	}

	if len(pets) > q.limit {
		pets = pets[:q.limit]
		next := url.Values{"limit": {strconv.Itoa(q.limit)}, "cursor": {encodeCursor(lastID)}}
		if q.status != "" {
			next.Set("status", q.status)
		}
		page.link = `</v1/pets?` + next.Encode() + `>; rel="next"`
	}
	if page.body, err = encodeJSON(pets); err != nil {
		return page, err
	}
	reads.pages.Put(version, pageKey, page)
	return page, nil
}

// handleCreatePet serves createPet. With an Idempotency-Key, the pet and the
// answer are stored in one transaction (package idempotency); without one,
// the path does nothing more than create the pet.
func handleCreatePet(writes *petWrites) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
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
			return createPetOnce(e, writes, idemKey, body)
		}

		np, derr := decodeNewPet(body)
		if derr != nil {
			return derr
		}
		pet, err := writes.create(e.App, np)
		if err != nil {
			return err
		}
		e.Response.Header().Set("Location", petLocation(pet))
		return writeJSON(e.Response, http.StatusCreated, pet)
	}
}

// createPetOnce is createPet for a request with an Idempotency-Key: the
// 201, or the 400 for the body, is remembered and replayed to retries.
func createPetOnce(e *core.RequestEvent, writes *petWrites, idemKey string, body []byte) error {
	var bodyErr *Error
	answer, outcome, err := idempotency.Do(e.App, apiKeyID(e), idemKey, body, time.Now(),
		func(tx core.App) (idempotency.Answer, error) {
			np, derr := decodeNewPet(body)
			if derr != nil {
				bodyErr = derr
				data, err := encodeJSON(derr)
				return idempotency.Answer{Status: derr.Status, Body: data}, err
			}
			pet, err := writes.create(tx, np)
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

func petLocation(p Pet) string { return "/v1/pets/" + strconv.FormatInt(p.ID, 10) }

// handleGetPet serves the deprecated getPet.
func handleGetPet(reads *petReads) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		if err := noQuery(e.Request.URL.RawQuery); err != nil {
			return err
		}
		id, perr := parsePetID(e.Request.PathValue("petId"))
		if perr != nil {
			return perr
		}
		version, err := dataVersion(e, reads.version)
		if err != nil {
			return err
		}
		body, err := petBody(reads, version, id)
		if errors.Is(err, sql.ErrNoRows) {
			return newError(http.StatusNotFound, CodeNotFound, "No pet with id %s.", id)
		}
		if err != nil {
			return err
		}
		return writeJSONBytes(e.Response, http.StatusOK, body)
	}
}

// petBody is getPet's answer for the pet with id: kept, or read and kept.
// An absent pet is sql.ErrNoRows, and not kept: a key guessing ids would
// fill the cache with them.
func petBody(reads *petReads, version int64, id string) ([]byte, error) {
	if body, ok := reads.pets.Get(version, id); ok {
		return body, nil
	}
	pet, _, err := scanPet(reads.get.QueryRow(sql.Named("id", id)))
	if err != nil {
		return nil, err
	}
	body, err := encodeJSON(pet)
	if err != nil {
		return nil, err
	}
	reads.pets.Put(version, id, body)
	return body, nil
}
