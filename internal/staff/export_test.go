package staff_test

import (
	"context"
	dbsql "database/sql"
	"encoding/csv"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pocketbase/dbx"

	"petstore/internal/audit"
	"petstore/internal/usage"
	"petstore/testkit/apptest"
)

// outcomeCounts are requests by outcome, as the chart's days count them.
type outcomeCounts struct {
	Requests int64 `json:"requests"`
	Refused  int64 `json:"refused"`
	Limited  int64 `json:"limited"`
	Failed   int64 `json:"failed"`
}

func (c *outcomeCounts) add(outcome string, n int64) {
	c.Requests += n
	switch outcome {
	case "refused":
		c.Refused += n
	case "limited":
		c.Limited += n
	case "failed":
		c.Failed += n
	}
}

// export reads /usage.csv?query as the superuser: its header and rows.
func (s *staffServer) export(t *testing.T, query string) (header []string, rows [][]string) {
	t.Helper()
	r := s.Do(t, http.MethodGet, "/api/petstore/usage.csv?"+query, s.token, nil)
	if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != "text/csv; charset=utf-8" {
		t.Fatalf("export %s: %d %s %s", query, r.StatusCode, r.Header.Get("Content-Type"), r.Body)
	}
	if cd := r.Header.Get("Content-Disposition"); !strings.HasPrefix(cd, "attachment; filename=\"usage-") {
		t.Errorf("export %s: Content-Disposition %q", query, cd)
	}
	all, err := csv.NewReader(strings.NewReader(string(r.Body))).ReadAll()
	if err != nil || len(all) == 0 {
		t.Fatalf("export %s: %v %q", query, err, r.Body)
	}
	return all[0], all[1:]
}

// sums adds an export's requests by the value of column group.
func sums(t *testing.T, header []string, rows [][]string, group string) map[string]*outcomeCounts {
	t.Helper()
	col := map[string]int{}
	for i, name := range header {
		col[name] = i
	}
	out := map[string]*outcomeCounts{}
	for _, row := range rows {
		n, err := strconv.ParseInt(row[col["requests"]], 10, 64)
		if err != nil {
			t.Fatalf("row %q: %v", row, err)
		}
		g := row[col[group]]
		if out[g] == nil {
			out[g] = &outcomeCounts{}
		}
		out[g].add(row[col["outcome"]], n)
	}
	return out
}

// A known load through /v1 (served, refused for the client's mistake,
// refused by the limit) by two keys of one customer and a key of none:
// the CSV export of today, per key and per customer, by day and by hour,
// sums to what each key's chart reads; only staff may export, and the
// export is audited.
func TestUsageExportSumsEqualTheChart(t *testing.T) {
	s := start(t)
	acme, keys := s.customerWithKeys(t, "Acme", "pro",
		map[string]any{"plan": "free", "name": "=production", "perMinute": 3}, map[string]any{"plan": "free", "name": "staging"})
	a, b := keys[0], keys[1]
	c := s.create(t, map[string]any{"plan": "free", "name": "solo"})

	sent := map[string]*outcomeCounts{a.ID: {}, b.ID: {}, c.ID: {}}
	send := func(k key, path string, n int) {
		for range n {
			status := s.Do(t, http.MethodGet, path, k.Key, nil).StatusCode
			sent[k.ID].add(usage.OutcomeOf(status).String(), 1)
		}
	}
	send(a, "/v1/pets", 2)
	send(a, "/v1/pets/999999999", 1)
	send(a, "/v1/pets", 2) // past its 3 a minute
	send(b, "/v1/pets", 4)
	send(c, "/v1/pets", 1)
	if got := sent[a.ID]; got.Limited != 2 || got.Refused != 1 || got.Requests != 5 {
		t.Fatalf("the load of %s: %+v, want 2 served, 1 refused, 2 limited", a.Name, got)
	}

	chart := map[string]outcomeCounts{}
	for id := range sent {
		var days []outcomeCounts
		s.call(t, http.MethodGet, "/keys/"+id+"/usage?days=1", nil, http.StatusOK, &days)
		chart[id] = days[0]
		if days[0] != *sent[id] {
			t.Errorf("the chart of %s reads %+v, want what was sent, %+v", id, days[0], *sent[id])
		}
	}

	now := time.Now().UTC()
	today, hour := now.Format(time.DateOnly), now.Format("2006-01-02T15")
	for _, query := range []string{"from=" + today + "&to=" + today, "from=" + hour + "&to=" + hour + "&by=hour"} {
		header, rows := s.export(t, query)
		if strings.Join(header, ",") != "period,key,key_name,customer,customer_name,operation,outcome,requests" {
			t.Errorf("the header per key: %q", header)
		}
		got := sums(t, header, rows, "key")
		for id, want := range chart {
			if got[id] == nil || *got[id] != want {
				t.Errorf("%s: the export sums %+v for %s, the chart %+v", query, got[id], id, want)
			}
		}
		for _, row := range rows {
			if row[1] == a.ID && (row[2] != "'=production" || row[3] != acme || row[4] != "Acme") {
				t.Errorf("%s: the row of %s names %q", query, a.Name, row[1:5])
			}
		}

		header, rows = s.export(t, query+"&per=customer")
		got = sums(t, header, rows, "customer")
		want := outcomeCounts{}
		for _, k := range []key{a, b} {
			ck := chart[k.ID]
			want.Requests += ck.Requests
			want.Refused += ck.Refused
			want.Limited += ck.Limited
			want.Failed += ck.Failed
		}
		if got[acme] == nil || *got[acme] != want {
			t.Errorf("%s: the export sums %+v for Acme, its keys' charts %+v", query, got[acme], want)
		}
		if got[""] == nil || *got[""] != chart[c.ID] {
			t.Errorf("%s: the export sums %+v for no customer, the chart of %s %+v", query, got[""], c.Name, chart[c.ID])
		}
	}

	_, rows := s.export(t, "from="+today+"&to="+today+"&key="+b.ID)
	if got := sums(t, []string{"period", "key", "key_name", "customer", "customer_name", "operation", "outcome", "requests"}, rows, "key"); len(got) != 1 || *got[b.ID] != chart[b.ID] {
		t.Errorf("the export of %s alone: %+v", b.Name, got)
	}
	_, rows = s.export(t, "from="+today+"&to="+today+"&customer="+acme)
	if got := sums(t, []string{"period", "key", "key_name", "customer", "customer_name", "operation", "outcome", "requests"}, rows, "customer"); len(got) != 1 || got[acme] == nil {
		t.Errorf("the export of Acme alone: %+v", got)
	}
	yesterday := now.AddDate(0, 0, -1).Format(time.DateOnly)
	if _, rows := s.export(t, "from="+yesterday+"&to="+yesterday); len(rows) != 0 {
		t.Errorf("the export of yesterday, without use: %q", rows)
	}

	for query, why := range map[string]string{
		"to=" + today:                                            "From must be a UTC day",
		"from=" + today + "&to=" + yesterday:                     "From must not be after to",
		"from=" + today + "&to=" + today + "&by=x":               "By must be day or hour",
		"from=" + today + "&to=" + today + "&per=x":              "Per must be key or customer",
		"from=" + today + "&to=" + today + "&key=nosuchkey12345": "No key has the id",
		"from=" + today + "&to=" + today + "&days=3":             "Unknown parameter",
	} {
		r := s.Do(t, http.MethodGet, "/api/petstore/usage.csv?"+query, s.token, nil)
		if r.StatusCode != http.StatusBadRequest || !strings.Contains(string(r.Body), why) {
			t.Errorf("%s: %d %s, want 400 saying %q", query, r.StatusCode, r.Body, why)
		}
	}
	for name, token := range map[string]string{"a guest": "", "an API key": a.Key} {
		if r := s.Do(t, http.MethodGet, "/api/petstore/usage.csv?from="+today+"&to="+today, token, nil); r.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s exports: %d %s, want 401", name, r.StatusCode, r.Body)
		}
	}

	var trail []struct {
		ActorEmail string `db:"actor_email"`
		Customer   string `db:"customer"`
		Key        string `db:"key"`
	}
	if err := s.App.DB().NewQuery("SELECT actor_email, customer, key FROM audit_log WHERE action = {:a} ORDER BY rowid").
		Bind(map[string]any{"a": string(audit.UsageExported)}).All(&trail); err != nil {
		t.Fatal(err)
	}
	if len(trail) != 7 || trail[0].ActorEmail != "staff@example.com" || trail[4].Key != b.ID || trail[5].Customer != acme {
		t.Errorf("the exports' audit records: %+v, want 7 by staff@example.com, the fifth naming %s, the sixth Acme", trail, b.Name)
	}
}

// An export reads the keys of its range alone: with 2,000 keys used today
// stored, the export of one key's day, and of a day without use, send a few
// queries, each bounded by a WHERE (the range, the key): none reads every
// key, plan or customer, as reading every key with its plan did.
func TestUsageExportReadsOnlyItsKeys(t *testing.T) {
	var (
		mu        sync.Mutex
		recording bool
		queries   []string
	)
	log := func(_ context.Context, _ time.Duration, sql string, _ *dbsql.Rows, _ error) {
		mu.Lock()
		if recording {
			queries = append(queries, sql)
		}
		mu.Unlock()
	}
	srv := apptest.Start(t, "")
	for _, db := range []dbx.Builder{srv.App.ConcurrentDB(), srv.App.NonconcurrentDB()} {
		db.(*dbx.DB).QueryLogFunc = log
	}
	s := &staffServer{srv, srv.SuperuserToken(t, "staff@example.com", "a long enough password")}
	s.SeedKeys(t, 2000, "seeded")
	k := s.create(t, map[string]any{"plan": "free", "name": "shop"})
	s.v1(t, k.Key)

	today := time.Now().UTC().Format(time.DateOnly)
	yesterday := time.Now().UTC().AddDate(0, 0, -1).Format(time.DateOnly)
	for _, query := range []string{"from=" + today + "&to=" + today + "&key=" + k.ID, "from=" + yesterday + "&to=" + yesterday + "&per=customer"} {
		mu.Lock()
		recording, queries = true, nil
		mu.Unlock()
		_, rows := s.export(t, query)
		mu.Lock()
		recording = false
		sent := queries
		mu.Unlock()
		if strings.Contains(query, "key=") && (len(rows) != 1 || rows[0][2] != "shop") {
			t.Errorf("%s: rows %q, want the one of shop", query, rows)
		}
		if len(sent) > 6 {
			t.Errorf("%s: %d queries, want at most 6: %q", query, len(sent), sent)
		}
		for _, q := range sent {
			if !strings.Contains(strings.ToUpper(q), " WHERE ") {
				t.Errorf("%s: a query without WHERE: %s", query, q)
			}
		}
	}
}
