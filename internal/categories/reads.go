package categories

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/dataversion"
	"petstore/internal/pets"
	"petstore/internal/tracing"
)

// Reads is /v1's list of categories, prepared once on the read pool, with
// the pages it answered kept while the categories' table is unchanged
// (package dataversion), as pets.Reads keeps the pets' pages.
type Reads struct {
	list   *sql.Stmt
	encode func(any) ([]byte, error) // the body a page is sent as
	pages  *dataversion.Cache[Page]
}

// Page is a page of categories: their JSON array, and the number of its
// last category when there are more after it (0 on the last page).
type Page struct {
	JSON []byte
	Next int64
}

// Stamp is a number that, with v's Epoch, names every page List answers at
// v: a change of the categories moves it.
func Stamp(v dataversion.Version) int64 { return v.Of(Collection) }

// maxKeptPages bounds the pages kept.
const maxKeptPages = 256

// The list has no LIMIT, as the pets' list: SQLite produces the rows in
// order of the unique index on number, and List stops after the page.
const listSQL = "SELECT CAST(number AS INTEGER), name FROM categories WHERE number > :after ORDER BY number"

// PrepareReads prepares the list on db, the app's read pool. encode makes
// the body a page is sent as (the /v1 layer's).
func PrepareReads(db *sql.DB, encode func(any) ([]byte, error)) (*Reads, error) {
	list, err := db.Prepare(listSQL)
	if err != nil {
		return nil, fmt.Errorf("prepare the categories' list: %w", err)
	}
	return &Reads{list: list, encode: encode, pages: dataversion.NewCache[Page](maxKeptPages, Collection)}, nil
}

// List is the page of at most limit categories after the number after (0:
// from the first), in ascending number order, at version: kept, or read
// and kept.
// ctx carries the request's span, if any; a read from SQLite is a span of it.
func (r *Reads) List(ctx context.Context, version dataversion.Version, limit int, after int64) (Page, error) {
	key := strconv.FormatInt(after, 10) + "\x00" + strconv.Itoa(limit)
	return r.pages.Load(version, key, func() (Page, error) { return r.readPage(ctx, limit, after) })
}

func (r *Reads) readPage(ctx context.Context, limit int, after int64) (page Page, err error) {
	_, span := tracing.Start(ctx, "sqlite.categories.list")
	defer tracing.End(span, &err)
	rows, err := r.list.Query(sql.Named("after", after))
	if err != nil {
		return page, err
	}
	defer rows.Close()
	categories := make([]Category, 0, limit+1)
	for len(categories) <= limit && rows.Next() {
		var c Category
		if err := rows.Scan(&c.ID, &c.Name); err != nil {
			return page, err
		}
		categories = append(categories, c)
	}
	if err := rows.Err(); err != nil {
		return page, err
	}
	rows.Close() // the connection goes back before the body is made
	if len(categories) > limit {
		categories = categories[:limit]
		page.Next = categories[limit-1].ID
	}
	page.JSON, err = r.encode(categories)
	return page, err
}

// Use is a category as the staff page shows it, named or not, with the
// number of pets that carry it.
type Use struct {
	ID          int64  `db:"id" json:"id"`
	Name        string `db:"name" json:"name"` // "" for an unnamed category
	Description string `db:"description" json:"description"`
	Pets        int64  `db:"pets" json:"pets"`
}

// Uses are every category and every number pets carry that no category
// names, in ascending number order, with their pets.
func Uses(app core.App) ([]Use, error) {
	uses := []Use{}
	err := app.DB().NewQuery(`
		SELECT CAST(c.number AS INTEGER) AS id, c.name AS name, c.description AS description,
			(SELECT COUNT(*) FROM pets p WHERE p.categoryId = c.number) AS pets
		FROM categories c
		UNION ALL
		SELECT CAST(p.categoryId AS INTEGER), '', '', COUNT(*) FROM pets p
		WHERE NOT EXISTS (SELECT 1 FROM categories c WHERE c.number = p.categoryId)
		GROUP BY p.categoryId
		ORDER BY id`).All(&uses)
	return uses, err
}

// Count is how many categories are named.
func Count(db *sql.DB) (n int64, err error) {
	err = db.QueryRow("SELECT COUNT(*) FROM " + Collection).Scan(&n)
	return n, err
}

// CountUnnamed is how many numbers pets carry as their categoryId that no
// category names. idx_pets_category serves the distinct numbers in order.
func CountUnnamed(db *sql.DB) (n int64, err error) {
	err = db.QueryRow("SELECT COUNT(DISTINCT categoryId) FROM " + pets.Collection + " p WHERE NOT EXISTS (SELECT 1 FROM " +
		Collection + " c WHERE c." + NumberField + " = p.categoryId)").Scan(&n)
	return n, err
}
