package apikeys

import (
	"strings"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"
)

// Query selects one page of keys: those matching Search and State, in Sort
// order. The database does the searching, counting, sorting and paging, so
// that a page costs about the same with ten keys or ten thousand.
type Query struct {
	// Search is a whole key (found by its hash, the current or the previous
	// secret's), a record id, part of a name (any case), or the start of a
	// prefix ("pet_AbCd", with or without its "…"). Empty: every key.
	Search string
	// State is one of the key states (StateActive...), or empty for all.
	State string
	// Sort is one of Sorts; empty is SortNewest.
	Sort    string
	Page    int // from 1
	PerPage int // from 1
}

// States are the key states, in the order the staff page offers them.
var States = []string{StateActive, StateBanned, StateRevoked, StateExpired}

// Page is one page of keys, with the counts that place it.
type Page struct {
	Keys     []*APIKey // with their plan expanded
	Matching int       // keys matching Search and State, on every page
	Total    int       // every key
}

// Search returns the page of keys that q selects, as of now.
func Search(app core.App, q Query, now time.Time) (Page, error) {
	order, ok := Sorts[q.Sort]
	if q.Sort == "" {
		order, ok = Sorts[SortNewest], true
	}
	if !ok || q.Page < 1 || q.PerPage < 1 {
		return Page{}, badSettings("", "no such page or order")
	}
	matching := func() *dbx.SelectQuery {
		query := app.RecordQuery(Collection)
		for _, exp := range []dbx.Expression{searchExp(q.Search), stateExp(q.State, now)} {
			if exp != nil {
				query.AndWhere(exp)
			}
		}
		return query
	}

	var page Page
	total, err := app.CountRecords(Collection)
	if err != nil {
		return page, err
	}
	page.Total = int(total)
	if err := matching().Select("count(*)").Row(&page.Matching); err != nil {
		return page, err
	}
	// The page's ids first, then their records: sorting ids alone is much
	// cheaper than sorting whole records when no index gives the order.
	var ids []string
	err = matching().Select("id").OrderBy(order...).
		Limit(int64(q.PerPage)).Offset(int64(q.Page-1) * int64(q.PerPage)).Column(&ids)
	if err != nil {
		return page, err
	}
	records, err := app.FindRecordsByIds(Collection, ids)
	if err != nil {
		return page, err
	}
	byID := make(map[string]*core.Record, len(records))
	for _, r := range records {
		byID[r.Id] = r
	}
	page.Keys = make([]*APIKey, 0, len(ids))
	for _, id := range ids {
		if r := byID[id]; r != nil { // nil: deleted since the ids were read
			page.Keys = append(page.Keys, &APIKey{r})
		}
	}
	for _, err := range app.ExpandRecords(records, []string{PlanField}, nil) {
		return page, err
	}
	return page, nil
}

// searchExp matches what staff have in hand: a whole key, pasted; an id
// (the `keys` command's); a name or part of it; a prefix as the page shows.
func searchExp(search string) dbx.Expression {
	search = strings.TrimSpace(search)
	if search == "" {
		return nil
	}
	if wellFormed(search) {
		return dbx.Or(dbx.HashExp{HashField: Hash(search)}, dbx.HashExp{PreviousHashField: Hash(search)})
	}
	prefix := strings.TrimSuffix(strings.TrimSuffix(search, "…"), "...")
	return dbx.Or(
		dbx.HashExp{"id": search},
		dbx.NewExp(nameContainsSQL, dbx.Params{"contains": "%" + escapeLike(search) + "%"}),
		dbx.NewExp(prefixStartsSQL, dbx.Params{"starts": escapeLike(prefix) + "%"}),
	)
}

// escapeLike makes s match itself in a LIKE pattern with ESCAPE '\'.
func escapeLike(s string) string {
	return strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`).Replace(s)
}

// stateExp matches the keys in state at now, as State tells it. Dates are
// stored as text that sorts as time does; an empty one sorts first.
func stateExp(state string, now time.Time) dbx.Expression {
	if cond, ok := stateSQL[state]; ok {
		return dbx.NewExp(cond, dbx.Params{"now": dateString(now)})
	}
	return nil
}

// List returns every key, newest first, with its plan expanded.
func List(app core.App) ([]*APIKey, error) {
	return listWhere(app, nil)
}

// OfCustomer is every key of the customer with the given record id, revoked
// ones included, newest first, each with its plan expanded.
func OfCustomer(app core.App, customerID string) ([]*APIKey, error) {
	return listWhere(app, dbx.HashExp{CustomerField: customerID})
}

// Customers is the record id of the customer of every key that has one, by
// the key's record id.
func Customers(app core.App) (map[string]string, error) {
	var rows []struct {
		ID       string `db:"id"`
		Customer string `db:"customer"`
	}
	err := app.DB().Select("id", CustomerField).From(Collection).Where(dbx.NewExp(CustomerField + " != ''")).All(&rows)
	if err != nil {
		return nil, err
	}
	owners := make(map[string]string, len(rows))
	for _, r := range rows {
		owners[r.ID] = r.Customer
	}
	return owners, nil
}

// listWhere is every key that where selects (nil: all), newest first, each
// with its plan expanded.
func listWhere(app core.App, where dbx.Expression) ([]*APIKey, error) {
	var keys []*APIKey
	q := app.RecordQuery(Collection).OrderBy(Sorts[SortNewest]...)
	if where != nil {
		q = q.AndWhere(where)
	}
	if err := q.All(&keys); err != nil {
		return nil, err
	}
	records := make([]*core.Record, len(keys))
	for i, k := range keys {
		records[i] = k.Record
	}
	for _, err := range app.ExpandRecords(records, []string{PlanField}, nil) {
		return nil, err
	}
	return keys, nil
}
