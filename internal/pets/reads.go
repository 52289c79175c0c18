package pets

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"

	"petstore/internal/dataversion"
	"petstore/internal/tracing"
)

// ErrNotFound is Get's error for an id that no pet has.
var ErrNotFound = errors.New("pets: no such pet")

// Reads are listPets' and getPet's queries, each prepared once on the read
// pool (SQLite parses a statement once per pooled connection, not once per
// request), reading plain rows: no core.Record, no record hooks, which only
// matter when a pet is saved.
//
// Every answer is the database's state at the version its caller read
// (package dataversion): read then, or kept since, so a kept answer is never
// older than the request that gets it. Any commit, by any connection of any
// process, drops the last pages (those without a next one). The other pages
// hold no pet after their last, so they outlive a new pet appended after
// every other (ids grow with time): an update, a deletion or an insert
// below the largest id drops them (dataversion.Before). The pets kept by id
// outlive every new pet, since an absent one is never kept: an update, a
// deletion or an insert that replaces one drops them (dataversion.Rows).
// Answers are kept as JSON, the form they are sent in.
//
// The queries take no context: a page of rows is not worth interrupting, and
// a cancellable context costs database/sql and the driver a goroutine per
// query.
type Reads struct {
	list, listByStatus, get *sql.Stmt
	encode                  func(any) ([]byte, error) // the body a pet or a page is sent as
	// pages keeps every page read, the last ones as a hint only; lastPages
	// keeps the last pages.
	pages, lastPages *dataversion.Cache[Page]
	pets             *dataversion.Cache[[]byte]
}

// Query asks for a page of listPets.
type Query struct {
	Limit  int
	Status string // empty: any
	After  string // a pet id; empty: from the start
}

// Page is a page of pets: their JSON array, and the id of its last pet when
// there are more after it.
type Page struct {
	JSON []byte
	Next string // empty on the last page
}

// Stamp is a number that, with v's Epoch, names the answer p (read at v or
// since) among the answers to its query: the same while nothing the page
// shows may have changed, a new one when it may have. A page with a next one
// holds no pet after its last, so only a change before the last pet
// (dataversion.Before) moves its stamp; a last page's moves with every
// change of the pets, since a pet appended after every other joins it. The
// two kinds count differently: callers tell them apart by Next.
func (p Page) Stamp(v dataversion.Version) int64 {
	if p.Next != "" {
		return v.Of(dataversion.Before(Collection))
	}
	return v.Of(Collection)
}

// PetStamp is a number that, with v's Epoch, names the answer Get gives for
// any one pet at v: only an update, a deletion or an insert that replaces a
// pet moves it (dataversion.Rows), not a new pet.
func PetStamp(v dataversion.Version) int64 { return v.Of(dataversion.Rows(Collection)) }

// maxKeptPages bounds the pages kept: at most about 7 KB each (100 pets).
// maxKeptPets bounds the single pets kept: about 100 bytes each.
const (
	maxKeptPages = 1024
	maxKeptPets  = 16384
)

// The id column is text of 15 digits: text order is numeric order, and the
// primary key (or idx_pets_status_id with a status) serves the page in order.
// The list has no LIMIT: SQLite produces the rows one step at a time, and
// List stops after the page. A bound LIMIT would make SQLite compile the
// statement again on every run (a bound value it may plan by).
const (
	columns         = "id, name, CAST(categoryId AS INTEGER), status FROM pets"
	listSQL         = "SELECT " + columns + " WHERE id > :after ORDER BY id"
	listByStatusSQL = "SELECT " + columns + " WHERE status = :status AND id > :after ORDER BY id"
	getSQL          = "SELECT " + columns + " WHERE id = :id"
)

// PrepareReads prepares the reads on db, the app's read pool
// (app.ConcurrentDB()). The statements live as long as db. encode makes the
// body an answer is sent as (the /v1 layer's); it is what the answers kept
// hold.
func PrepareReads(db *sql.DB, encode func(any) ([]byte, error)) (*Reads, error) {
	r := Reads{
		encode:    encode,
		pages:     dataversion.NewCache[Page](maxKeptPages, dataversion.Before(Collection)),
		lastPages: dataversion.NewCache[Page](maxKeptPages),
		pets:      dataversion.NewCache[[]byte](maxKeptPets, dataversion.Rows(Collection)),
	}
	for _, q := range []struct {
		stmt **sql.Stmt
		sql  string
	}{{&r.list, listSQL}, {&r.listByStatus, listByStatusSQL}, {&r.get, getSQL}} {
		stmt, err := db.Prepare(q.sql)
		if err != nil {
			return nil, fmt.Errorf("prepare the pets reads: %w", err)
		}
		*q.stmt = stmt
	}
	return &r, nil
}

// List is the page q asks for, at version: kept, or read and kept. Pets
// come in ascending id order; ids never change, so walking the pages (After
// the last id seen) visits every pet that existed when the walk began
// exactly once, even while others are added.
//
// ctx carries the request's span, if any; a read from SQLite is a span of
// it. The read itself takes no context (apikeys.Finder.Find says why).
func (r *Reads) List(ctx context.Context, version dataversion.Version, q Query) (Page, error) {
	key := q.Status + "\x00" + q.After + "\x00" + strconv.Itoa(q.Limit)
	read := false
	page, err := r.pages.Load(version, key, func() (Page, error) { read = true; return r.readPage(ctx, q) })
	if err != nil || page.Next != "" || read {
		return page, err
	}
	// A last page kept in pages may have missed a pet appended since.
	return r.lastPages.Load(version, key, func() (Page, error) { return r.readPage(ctx, q) })
}

func (r *Reads) readPage(ctx context.Context, q Query) (page Page, err error) {
	_, span := tracing.Start(ctx, "sqlite.pets.list")
	defer tracing.End(span, &err)
	after := sql.Named("after", q.After)
	var rows *sql.Rows
	if q.Status == "" {
		rows, err = r.list.Query(after)
	} else {
		rows, err = r.listByStatus.Query(sql.Named("status", q.Status), after)
	}
	if err != nil {
		return page, err
	}
	pets, last, err := scanPage(rows, q.Limit)
	if err != nil {
		return page, err
	}
	if len(pets) > q.Limit {
		pets, page.Next = pets[:q.Limit], last
	}
	page.JSON, err = r.encode(pets)
	return page, err
}

// Get is the JSON of the pet with id, at version: kept, or read and kept.
// An absent pet is ErrNotFound, and not kept: a key guessing ids would fill
// the cache with them.
func (r *Reads) Get(ctx context.Context, version dataversion.Version, id string) ([]byte, error) {
	return r.pets.Load(version, id, func() (_ []byte, err error) {
		_, span := tracing.Start(ctx, "sqlite.pets.get")
		defer tracing.End(span, &err, ErrNotFound)
		pet, _, err := scanPet(r.get.QueryRow(sql.Named("id", id)))
		if errors.Is(err, sql.ErrNoRows) {
			return nil, ErrNotFound
		}
		if err != nil {
			return nil, err
		}
		return r.encode(pet)
	})
}

// scanPet reads a row of columns. The id pattern guarantees 15 digits.
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
// written. last is the id of the page's last pet.
func scanPage(rows *sql.Rows, limit int) (pets []Pet, last string, err error) {
	defer rows.Close()
	pets = make([]Pet, 0, limit+1)
	for len(pets) <= limit && rows.Next() {
		p, id, err := scanPet(rows)
		if err != nil {
			return nil, "", err
		}
		if len(pets) < limit {
			last = id
		}
		pets = append(pets, p)
	}
	return pets, last, rows.Err()
}

// Count is how many pets are stored.
func Count(db *sql.DB) (n int64, err error) {
	err = db.QueryRow("SELECT COUNT(*) FROM " + Collection).Scan(&n)
	return n, err
}
