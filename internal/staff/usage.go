package staff

import (
	"net/http"
	"time"

	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/customers"
	"petstore/internal/usage"
)

// maxTopCustomers bounds ?limit= of the top customers.
const maxTopCustomers = 100

// handleTopCustomers answers the customers of most requests in the current
// UTC month (?limit=, 1 to maxTopCustomers, default 10), with their plans
// and, where their plan counts per customer, their share of its day quota.
func handleTopCustomers(history *usage.Recorder) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		q, err := parseQuery(e.Request.URL.RawQuery)
		if err != nil {
			return err
		}
		if len(q["limit"]) > 1 {
			return badRequest("limit is given more than once")
		}
		n, err := wholeNumber(q, "limit", 10, maxTopCustomers)
		if err != nil {
			return err
		}
		if err := history.Save(); err != nil {
			return storeError(err)
		}
		now := time.Now().UTC()
		top, err := customers.TopOfMonth(e.App, now, n)
		if err != nil {
			return storeError(err)
		}
		return writeJSON(e, http.StatusOK, map[string]any{"month": now.Format("2006-01"), "items": top})
	}
}

// windowView is a day window near its limit, as the staff page lists it.
type windowView struct {
	apikeys.Window
	CustomerName string  `json:"customerName"`
	Percent      float64 `json:"percent"` // Used of Limit, in %
}

// handleNearLimit answers the day windows past apikeys.NearLimitPercent of
// their day quota today, fullest first: the keys that count in windows of
// their own, and the customers whose keys share one.
func handleNearLimit(history *usage.Recorder) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		if err := history.Save(); err != nil {
			return storeError(err)
		}
		now := time.Now().UTC()
		keys, shared, err := apikeys.NearLimit(e.App, now)
		if err != nil {
			return storeError(err)
		}
		var ids []string
		for _, w := range append(keys, shared...) {
			if w.Customer != "" {
				ids = append(ids, w.Customer)
			}
		}
		names, err := customers.Names(e.App, ids)
		if err != nil {
			return storeError(err)
		}
		views := func(windows []apikeys.Window) []windowView {
			v := make([]windowView, len(windows))
			for i, w := range windows {
				if w.Name == "" {
					w.Name = names[w.Customer] // a customer's window
				}
				v[i] = windowView{Window: w, CustomerName: names[w.Customer], Percent: float64(w.Used) * 100 / float64(w.Limit)}
			}
			return v
		}
		return writeJSON(e, http.StatusOK, map[string]any{
			"day": now.Format(time.DateOnly), "percent": apikeys.NearLimitPercent, "keys": views(keys), "customers": views(shared),
		})
	}
}

// handleCustomerUsage answers the use of the customer's keys, revoked ones
// included, on each of the last ?days= UTC days (1 to maxChartDays,
// default 30), oldest first.
func handleCustomerUsage(history *usage.Recorder) func(*core.RequestEvent) error {
	return func(e *core.RequestEvent) error {
		days, err := parseDays(e.Request.URL.RawQuery)
		if err != nil {
			return err
		}
		ids, err := customerKeys(e)
		if err != nil {
			return err
		}
		h, err := history.Days(ids, days, time.Now())
		if err != nil {
			return storeError(err)
		}
		return writeJSON(e, http.StatusOK, h)
	}
}
