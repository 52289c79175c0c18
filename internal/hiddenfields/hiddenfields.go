// Package hiddenfields keeps hidden fields out of searches. PocketBase hides
// a field marked Hidden from every answer, but lets superusers filter and
// sort by it: a filter such as `secret>='whsec_l4F'` answers one record or
// none, and a binary search of such filters reads a webhook's secret or a
// key's hash out one character at a time. Here a filter or sort that names
// a hidden field of any collection is refused, for everyone, on the records
// API's list and view and on realtime subscriptions; so is a collection
// rule that names one (a guest's request answered or refused by the rule
// would read it out as a filter does); and so is a view collection whose
// query names one, or names a collection that has one (`SELECT *`, or a
// UNION that takes its columns by position, would show it unhidden).
package hiddenfields

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/ganigeorgiev/fexpr"
	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/hook"
	"github.com/pocketbase/pocketbase/tools/search"
	"github.com/spf13/cast"
)

// Bind refuses, on app, every list, view and realtime subscription whose
// filter or sort names a hidden field, and leaves the hidden fields out of
// the dashboard's search box (dashboardSearch).
func Bind(app core.App) {
	app.OnServe().BindFunc(func(se *core.ServeEvent) error {
		se.Router.Bind(&hook.Handler[*core.RequestEvent]{
			Id:       "petstoreDashboardSearch",
			Priority: dashboardSearchPriority,
			Func: func(e *core.RequestEvent) error {
				if e.Request.Method == http.MethodGet && e.Request.Pattern == recordsListPattern {
					q := e.Request.URL.Query()
					if filter, ok := dashboardSearch(e.App, q.Get(search.FilterQueryParam)); ok {
						q.Set(search.FilterQueryParam, filter)
						e.Request.URL.RawQuery = q.Encode()
					}
				}
				return e.Next()
			},
		})
		return se.Next()
	})
	app.OnRecordsListRequest().BindFunc(func(e *core.RecordsListRequestEvent) error {
		if err := checkQuery(e.App, e.Request.URL.Query()); err != nil {
			return e.BadRequestError(err.Error(), nil)
		}
		return e.Next()
	})
	app.OnRecordViewRequest().BindFunc(func(e *core.RecordRequestEvent) error {
		if err := checkQuery(e.App, e.Request.URL.Query()); err != nil {
			return e.BadRequestError(err.Error(), nil)
		}
		return e.Next()
	})
	checkCollection := func(e *core.CollectionRequestEvent) error {
		viewQuery := ""
		if e.Collection.IsView() {
			viewQuery = changedViewQuery(e.App, e.Collection.Id, e.Collection.ViewQuery)
		}
		if err := checkSchema(e.App, collectionRules(e.Collection), viewQuery); err != nil {
			return e.BadRequestError(err.Error(), nil)
		}
		return e.Next()
	}
	app.OnCollectionCreateRequest().BindFunc(checkCollection)
	app.OnCollectionUpdateRequest().BindFunc(checkCollection)
	app.OnCollectionsImportRequest().BindFunc(func(e *core.CollectionsImportRequestEvent) error {
		for _, data := range e.CollectionsData {
			var rules []string
			for _, name := range ruleNames {
				rules = append(rules, cast.ToString(data[name]))
			}
			viewQuery := changedViewQuery(e.App, cast.ToString(data["id"]), cast.ToString(data["viewQuery"]))
			if err := checkSchema(e.App, rules, viewQuery); err != nil {
				return e.BadRequestError(err.Error(), nil)
			}
		}
		return e.Next()
	})
	app.OnRealtimeSubscribeRequest().BindFunc(func(e *core.RealtimeSubscribeRequestEvent) error {
		for _, s := range e.Subscriptions {
			if err := checkQuery(e.App, subscriptionQuery(s)); err != nil {
				return e.BadRequestError(err.Error(), nil)
			}
		}
		return e.Next()
	})
}

// dashboardSearchPriority runs the search's rewrite after the superuser's
// token is loaded and the body bounded, as the other guards of PocketBase's
// routes; on /v1 it passes every request by (internal/api's
// middleware_order.go lists the chain).
const dashboardSearchPriority = apis.DefaultBodyLimitMiddlewarePriority + 1

// recordsListPattern is the route of PocketBase's records list.
const recordsListPattern = "GET /api/collections/{collection}/records"

// dashboardSearch is filter without its terms on hidden fields, when it is
// the dashboard's search box's own filter: plain words typed in the box
// become `field ?~ 'words'` for every field of the collection, the hidden
// ones included, joined by ||. Without those terms, the box searches the
// other fields, as staff expect, instead of being refused. ok is false for
// any other filter, which checkQuery judges as it is.
func dashboardSearch(app core.App, filter string) (rewritten string, ok bool) {
	if filter == "" {
		return "", false
	}
	groups, err := fexpr.Parse(filter)
	if err != nil || len(groups) < 2 {
		return "", false
	}
	hidden, err := hiddenNames(app)
	if err != nil {
		return "", false
	}
	var kept []string
	words := ""
	for i, g := range groups {
		e, isExpr := g.Item.(fexpr.Expr)
		if !isExpr || e.Op != fexpr.SignAnyLike || e.Left.Type != fexpr.TokenIdentifier || e.Right.Type != fexpr.TokenText ||
			i > 0 && g.Join != fexpr.JoinOr || i > 0 && e.Right.Literal != words {
			return "", false
		}
		words = e.Right.Literal
		if !slices.Contains(hidden, e.Left.Literal) {
			kept = append(kept, e.Left.Literal)
		}
	}
	if len(kept) == len(groups) || len(kept) == 0 {
		return "", false
	}
	quoted := "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(words) + "'"
	for i, field := range kept {
		kept[i] = field + " ?~ " + quoted
	}
	return strings.Join(kept, " || "), true
}

// subscriptionQuery is the query of a realtime subscription's options
// (`topic?options={"query":{"filter":…}}`), read as PocketBase reads it.
func subscriptionQuery(subscription string) url.Values {
	u, err := url.Parse(subscription)
	if err != nil {
		return nil
	}
	var options struct {
		Query map[string]any `json:"query"`
	}
	if json.Unmarshal([]byte(u.Query().Get("options")), &options) != nil {
		return nil
	}
	q := url.Values{}
	for k, v := range options.Query {
		q.Set(k, cast.ToString(v))
	}
	return q
}

// ruleNames are a collection's rules as the collections API and an import
// name them.
var ruleNames = []string{"listRule", "viewRule", "createRule", "updateRule", "deleteRule", "authRule", "manageRule"}

// collectionRules are c's rules, each a filter ("" where none).
func collectionRules(c *core.Collection) []string {
	var rules []string
	for _, r := range []*string{c.ListRule, c.ViewRule, c.CreateRule, c.UpdateRule, c.DeleteRule, c.AuthRule, c.ManageRule} {
		if r != nil {
			rules = append(rules, *r)
		}
	}
	return rules
}

// changedViewQuery is query, unless the view collection id already holds
// it: a view that a migration made (usage_rollups reads api_keys) passes an
// import or an edit of its rules that leaves its query as it is, and a new
// or changed query is checked.
func changedViewQuery(app core.App, id, query string) string {
	if id == "" || query == "" {
		return query
	}
	if existing, err := app.FindCollectionByNameOrId(id); err == nil && existing.IsView() && existing.ViewQuery == query {
		return ""
	}
	return query
}

// checkSchema is an error naming the hidden field that one of a
// collection's rules names, or that its view query reads, if any.
func checkSchema(app core.App, rules []string, viewQuery string) error {
	hidden, err := hiddenNames(app)
	if err != nil {
		return err
	}
	for _, rule := range rules {
		if name, ok := namesHidden(hidden, appendIdentifiers(nil, rule)); ok {
			return fmt.Errorf("%q is a hidden field: no collection rule names it, so that no request answered by the rule can read it out", name)
		}
	}
	if viewQuery != "" {
		return checkViewQuery(app, hidden, viewQuery)
	}
	return nil
}

// namesHidden is the hidden field that one of identifiers names, through a
// relation or @collection too.
func namesHidden(hidden, identifiers []string) (string, bool) {
	for _, id := range identifiers {
		for _, part := range strings.FieldsFunc(id, func(r rune) bool { return r == '.' || r == ':' }) {
			if slices.Contains(hidden, part) {
				return part, true
			}
		}
	}
	return "", false
}

// checkQuery is an error naming the hidden field that q's filter or sort
// names, if any.
func checkQuery(app core.App, q url.Values) error {
	filter, sort := q.Get(search.FilterQueryParam), q.Get(search.SortQueryParam)
	if filter == "" && sort == "" {
		return nil
	}
	hidden, err := hiddenNames(app)
	if err != nil {
		return err
	}
	var identifiers []string
	identifiers = appendIdentifiers(identifiers, filter)
	for _, term := range strings.Split(sort, ",") {
		identifiers = appendIdentifiers(identifiers, strings.TrimLeft(strings.TrimSpace(term), "+-"))
	}
	if name, ok := namesHidden(hidden, identifiers); ok {
		return fmt.Errorf("%q is a hidden field: nobody filters or sorts by it, superusers included, "+
			"so that no search can read it out", name)
	}
	return nil
}

// checkViewQuery is an error naming the hidden field that a view
// collection's query names as a word, or the collection with hidden fields
// it names, if any.
func checkViewQuery(app core.App, hidden []string, query string) error {
	words := strings.FieldsFunc(strings.ToLower(query), func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	})
	for _, name := range hidden {
		if slices.Contains(words, strings.ToLower(name)) {
			return fmt.Errorf("%q is a hidden field: no view collection reads it, so that no view shows it", name)
		}
	}
	collections, err := app.FindAllCollections()
	if err != nil {
		return err
	}
	for _, c := range collections {
		if slices.Contains(words, strings.ToLower(c.Name)) && slices.ContainsFunc(c.Fields, core.Field.GetHidden) {
			return fmt.Errorf("the collection %s has hidden fields: no view collection reads it, so that no view shows them "+
				"(a SELECT * or a UNION takes its columns by position); name another collection", c.Name)
		}
	}
	return nil
}

// hiddenNames are the names of the hidden fields of every collection.
func hiddenNames(app core.App) ([]string, error) {
	collections, err := app.FindAllCollections()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, c := range collections {
		for _, f := range c.Fields {
			if f.GetHidden() {
				names = append(names, f.GetName())
			}
		}
	}
	return names, nil
}

// appendIdentifiers appends the identifiers an expression names, within
// groups and function arguments, as PocketBase's filter scanner reads them.
// An expression the scanner cannot read is refused by PocketBase itself.
func appendIdentifiers(ids []string, expr string) []string {
	s := fexpr.NewScanner([]byte(expr))
	for {
		t, err := s.Scan()
		if err != nil || t.Type == fexpr.TokenEOF {
			return ids
		}
		ids = appendToken(ids, t)
	}
}

func appendToken(ids []string, t fexpr.Token) []string {
	switch t.Type {
	case fexpr.TokenIdentifier:
		return append(ids, t.Literal)
	case fexpr.TokenGroup:
		return appendIdentifiers(ids, t.Literal)
	case fexpr.TokenFunction:
		args, _ := t.Meta.([]fexpr.Token)
		for _, a := range args {
			ids = appendToken(ids, a)
		}
	}
	return ids
}
