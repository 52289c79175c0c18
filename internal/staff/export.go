package staff

import (
	"cmp"
	"database/sql"
	"encoding/csv"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/internal/customers"
	"petstore/internal/usage"
)

// exportQuery is what an export asks for: ?from=&to= (UTC days,
// 2026-12-01, or hours, 2026-12-01T10; to included), by=day|hour (default
// day), per=key|customer (default key), and at most one of key= and
// customer= (a record id) to export only that one's use.
type exportQuery struct {
	from, to      string // as given, for the audit record and the file's name
	rg            usage.Range
	perCustomer   bool
	key, customer string
}

// exportParams are the parameters an export takes, each at most once.
var exportParams = []string{"from", "to", "by", "per", "key", "customer"}

func parseExport(rawQuery string) (exportQuery, error) {
	var x exportQuery
	q, err := parseQuery(rawQuery)
	if err != nil {
		return x, err
	}
	for name := range q {
		if !slices.Contains(exportParams, name) {
			return x, badRequest("unknown parameter %q: an export takes %s", name, strings.Join(exportParams, ", "))
		}
		if len(q[name]) > 1 {
			return x, badRequest("%s is given more than once", name)
		}
	}
	x.from, x.to = q.Get("from"), q.Get("to")
	from, _, err := exportBound("from", x.from)
	if err != nil {
		return x, err
	}
	to, length, err := exportBound("to", x.to)
	if err != nil {
		return x, err
	}
	x.rg.From, x.rg.To = from, to.Add(length)
	if !x.rg.From.Before(x.rg.To) {
		return x, badRequest("from must not be after to")
	}
	switch q.Get("by") {
	case "", "day":
		x.rg.Daily = true
	case "hour":
	default:
		return x, badRequest("by must be day or hour")
	}
	switch q.Get("per") {
	case "", "key":
	case "customer":
		x.perCustomer = true
	default:
		return x, badRequest("per must be key or customer")
	}
	x.key, x.customer = q.Get("key"), q.Get("customer")
	if x.key != "" && x.customer != "" {
		return x, badRequest("give key or customer, not both")
	}
	return x, nil
}

// exportBound reads a UTC day (2026-12-01) or hour (2026-12-01T10) and
// returns its start and its length.
func exportBound(name, v string) (time.Time, time.Duration, error) {
	if t, err := time.Parse(time.DateOnly, v); err == nil {
		return t, 24 * time.Hour, nil
	}
	if t, err := time.Parse("2006-01-02T15", v); err == nil {
		return t, time.Hour, nil
	}
	return time.Time{}, 0, badRequest("%s must be a UTC day (2026-12-01) or hour (2026-12-01T10)", name)
}

// handleExport streams the usage history of a range as CSV, a row per
// period, key (or customer), operation and outcome, and audits the export.
// A key's use counts to the customer it belongs to now. It reads the keys
// with use in the range alone, with their customers' names.
func handleExport(history *usage.Recorder) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		x, err := parseExport(e.Request.URL.RawQuery)
		if err != nil {
			return err
		}
		switch {
		case x.key != "":
			if _, err := e.App.FindRecordById(apikeys.Collection, x.key); errors.Is(err, sql.ErrNoRows) {
				return memberError("key", "validation_key_rule", "no key has the id %q", x.key)
			} else if err != nil {
				return storeError(err)
			}
			x.rg.Keys = []string{x.key}
		case x.customer != "":
			if _, err := e.App.FindRecordById(customers.Collection, x.customer); errors.Is(err, sql.ErrNoRows) {
				return memberError("customer", "validation_customer_rule", "no customer has the id %q", x.customer)
			} else if err != nil {
				return storeError(err)
			}
			if x.rg.Keys, err = customers.KeyIDs(e.App, x.customer); err != nil {
				return storeError(err)
			}
		}
		// Saved first, so that the owners read cover the keys of what
		// this instance has counted too.
		if err := history.Save(); err != nil {
			return storeError(err)
		}
		known, err := customers.OwnersIn(e.App, x.rg)
		if err != nil {
			return storeError(err)
		}
		owners := &exportOwners{app: e.App, rg: x.rg, known: known}
		if err := audit.Write(e.App, audit.Entry{Action: audit.UsageExported, Customer: x.customer, Key: x.key, By: audit.ActorOf(e),
			Details: x.details()}); err != nil {
			return storeError(err)
		}

		e.Response.Header().Set("Content-Type", "text/csv; charset=utf-8")
		e.Response.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="usage-%s-%s.csv"`, x.from, x.to))
		e.Response.WriteHeader(http.StatusOK)
		w := csv.NewWriter(e.Response)
		var rows exportRows
		if x.perCustomer {
			rows = &perCustomer{w: w, owners: owners, sums: map[customerCount]int64{}}
		} else {
			rows = &perKey{w: w, owners: owners}
		}
		err = rows.header()
		if err == nil {
			err = history.Export(x.rg, rows.add)
		}
		if err == nil {
			err = rows.end()
		}
		w.Flush()
		if err == nil {
			err = w.Error()
		}
		if err != nil {
			// The status is sent: the log tells, the client sees a cut file.
			e.App.Logger().Error("Could not export the usage history", "error", err)
		}
		return nil
	}
}

func (x exportQuery) details() map[string]any {
	d := map[string]any{"from": x.from, "to": x.to, "by": "hour", "per": "key"}
	if x.rg.Daily {
		d["by"] = "day"
	}
	if x.perCustomer {
		d["per"] = "customer"
	}
	return d
}

// exportOwners names the keys of an export: those with use in its range
// when it began, read at once, and any key whose first use was saved since
// (by another instance, or this one's flush), read when its row comes.
type exportOwners struct {
	app   core.App
	rg    usage.Range
	known map[string]customers.Owner
}

func (o *exportOwners) of(key string) (customers.Owner, error) {
	if owner, ok := o.known[key]; ok {
		return owner, nil
	}
	rg := o.rg
	rg.Keys = []string{key}
	found, err := customers.OwnersIn(o.app, rg)
	if err != nil {
		return customers.Owner{}, err
	}
	o.known[key] = found[key]
	return found[key], nil
}

// exportRows writes an export's rows as the rollups come.
type exportRows interface {
	header() error
	add(usage.Rollup) error
	end() error
}

// perKey writes a row per rollup, with the key's name and customer.
type perKey struct {
	w      *csv.Writer
	owners *exportOwners
}

func (p *perKey) header() error {
	return p.w.Write([]string{"period", "key", "key_name", "customer", "customer_name", "operation", "outcome", "requests"})
}

func (p *perKey) add(r usage.Rollup) error {
	o, err := p.owners.of(r.Key)
	if err != nil {
		return err
	}
	return p.w.Write([]string{r.Period, r.Key, cellText(o.KeyName), o.Customer, cellText(o.CustomerName),
		r.Operation, r.Outcome, fmt.Sprint(r.Requests)})
}

func (p *perKey) end() error { return nil }

// perCustomer sums the rollups of each period by customer, and writes the
// period's rows when the next period starts; keys of no customer sum under
// an empty customer.
type perCustomer struct {
	w      *csv.Writer
	owners *exportOwners
	period string
	sums   map[customerCount]int64
}

type customerCount struct {
	customer, name, operation, outcome string
}

func (p *perCustomer) header() error {
	return p.w.Write([]string{"period", "customer", "customer_name", "operation", "outcome", "requests"})
}

func (p *perCustomer) add(r usage.Rollup) error {
	if r.Period != p.period {
		if err := p.end(); err != nil {
			return err
		}
		p.period = r.Period
	}
	o, err := p.owners.of(r.Key)
	if err != nil {
		return err
	}
	p.sums[customerCount{o.Customer, o.CustomerName, r.Operation, r.Outcome}] += r.Requests
	return nil
}

// end writes the period's sums, by customer, operation and outcome.
func (p *perCustomer) end() error {
	counts := make([]customerCount, 0, len(p.sums))
	for c := range p.sums {
		counts = append(counts, c)
	}
	slices.SortFunc(counts, func(a, b customerCount) int {
		return cmp.Or(cmp.Compare(a.customer, b.customer), cmp.Compare(a.operation, b.operation), cmp.Compare(a.outcome, b.outcome))
	})
	for _, c := range counts {
		if err := p.w.Write([]string{p.period, c.customer, cellText(c.name), c.operation, c.outcome, fmt.Sprint(p.sums[c])}); err != nil {
			return err
		}
	}
	clear(p.sums)
	return nil
}

// cellText is a name as a CSV cell that a spreadsheet shows as text: a
// leading =, +, -, @, tab or carriage return would start a formula, so it
// gets a ' before it.
func cellText(s string) string {
	if s != "" && strings.ContainsRune("=+-@\t\r", rune(s[0])) {
		return "'" + s
	}
	return s
}
