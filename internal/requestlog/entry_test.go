package requestlog

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/apis"
	"github.com/pocketbase/pocketbase/core"
	"github.com/pocketbase/pocketbase/tools/router"
	"github.com/pocketbase/pocketbase/tools/types"
)

// Every request, answered alike under /ours (this package's logger) and /pb
// (PocketBase's activity logger), leaves the same row in _logs: level,
// message, created, and data field by field, the optional fields (error,
// details, meta, authId, userIP and remoteIP) included, with Settings → Logs
// logging IPs and auth ids and with it not.
func TestEntriesAreThoseOfPocketBase(t *testing.T) {
	for name, logs := range map[string]core.LogsConfig{
		"IPs and auth ids logged": {MaxDays: 5, LogIP: true, LogAuthId: true},
		"neither logged":          {MaxDays: 5},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			entriesAreThoseOfPocketBase(t, logs)
		})
	}
}

func entriesAreThoseOfPocketBase(t *testing.T, logs core.LogsConfig) {
	app := newTestApp(t)
	// Set before any request: PocketBase reads its settings without a lock.
	app.Settings().Logs = logs
	app.Settings().TrustedProxy.Headers = []string{"X-Forwarded-For"} // userIP is not remoteIP
	l := startLogger(t, app, All)

	superusers, err := app.FindCollectionByNameOrId(core.CollectionNameSuperusers)
	if err != nil {
		t.Fatal(err)
	}
	auth := core.NewRecord(superusers)
	auth.Id = "s0000000000000a"
	handlers := map[string]func(e *core.RequestEvent) error{
		"ok": func(e *core.RequestEvent) error {
			e.Auth = auth
			e.Set(apis.RequestEventKeyLogMeta, map[string]any{"pets": 20, "note": "<kept>"})
			return e.JSON(http.StatusOK, map[string]any{"ok": true})
		},
		"notFound": func(e *core.RequestEvent) error {
			return router.NewNotFoundError("", nil) // details: null
		},
		"badRequest": func(e *core.RequestEvent) error {
			e.Auth = auth
			return router.NewBadRequestError("Bad limit.", map[string]any{"limit": "must be 1 to 100"})
		},
		"wrapped": func(e *core.RequestEvent) error {
			return fmt.Errorf("while listing: %w", router.NewForbiddenError("", map[string]any{"why": 1}))
		},
		"plain": func(e *core.RequestEvent) error {
			return errors.New(`broken "quote" <tag> é`)
		},
		"written": func(e *core.RequestEvent) error {
			e.Response.WriteHeader(http.StatusConflict)
			return errors.New("written, then failed")
		},
		"empty": func(e *core.RequestEvent) error {
			return &router.ApiError{Status: http.StatusTeapot}
		},
	}

	r, err := apis.NewRouter(app)
	if err != nil {
		t.Fatal(err)
	}
	ours := r.Group("/ours")
	ours.Bind(l.Middleware())
	pb := r.Group("/pb")
	for name, handle := range handlers {
		ours.GET("/"+name+"/{rest...}", handle)
		pb.GET("/"+name+"/{rest...}", handle)
	}
	mux, err := r.BuildMux()
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(mux)
	defer srv.Close()

	sent := 0
	for name := range handlers {
		for _, group := range []string{"/ours/", "/pb/"} {
			req, err := http.NewRequest(http.MethodGet, srv.URL+group+name+"/a%20b%2Fc?q=<&>", nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("User-Agent", "petstore test \"ua\"")
			req.Header.Set("Referer", "https://example.com/ref?a=1&b=<2>")
			req.Header.Set("X-Forwarded-For", "203.0.113.9")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			sent++
		}
	}

	type row struct {
		Level   int    `db:"level"`
		Message string `db:"message"`
		Data    string `db:"data"`
		Created string `db:"created"`
	}
	var rows []row
	// PocketBase writes its entries 3 s after the last one.
	for deadline := time.Now().Add(20 * time.Second); len(rows) < sent; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d entries in the log after 20 s, want %d", len(rows), sent)
		}
		rows = rows[:0]
		err := app.AuxDB().Select("level", "message", "data", "created").From(core.LogsTableName).
			Where(dbx.NewExp("json_extract(data, '$.url') LIKE '/ours/%' OR json_extract(data, '$.url') LIKE '/pb/%'")).
			All(&rows)
		if err != nil {
			t.Fatal(err)
		}
	}

	// An entry's identity: its URL without the group.
	byURL := map[string]map[string]row{"/ours": {}, "/pb": {}}
	for _, r := range rows {
		var data map[string]any
		if err := json.Unmarshal([]byte(r.Data), &data); err != nil {
			t.Fatal(err)
		}
		url, _ := data["url"].(string)
		group, rest, _ := strings.Cut(url[1:], "/")
		byURL["/"+group][rest] = r
	}
	for url, o := range byURL["/ours"] {
		p, ok := byURL["/pb"][url]
		if !ok {
			t.Errorf("%s: logged by us, not by PocketBase", url)
			continue
		}
		if o.Level != p.Level {
			t.Errorf("%s: level %d, PocketBase's %d", url, o.Level, p.Level)
		}
		if want := strings.Replace(p.Message, " /pb/", " /ours/", 1); o.Message != want {
			t.Errorf("%s: message %q, PocketBase's %q", url, o.Message, p.Message)
		}
		for _, created := range []string{o.Created, p.Created} {
			if _, err := types.ParseDateTime(created); err != nil || len(created) != len(p.Created) {
				t.Errorf("%s: created %q, PocketBase's %q", url, o.Created, p.Created)
			}
		}
		od, pd := comparableData(t, o.Data), comparableData(t, p.Data)
		for key, want := range pd {
			if got, ok := od[key]; !ok {
				t.Errorf("%s: no %q, PocketBase's is %v", url, key, want)
			} else if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: %q is %#v, PocketBase's %#v", url, key, got, want)
			}
		}
		for key, got := range od {
			if _, ok := pd[key]; !ok {
				t.Errorf("%s: %q is %v, PocketBase has none", url, key, got)
			}
		}
		var canonical map[string]any
		_ = json.Unmarshal([]byte(o.Data), &canonical)
		if b, _ := json.Marshal(canonical); string(b) != o.Data {
			t.Errorf("%s: data is not stored as encoding/json writes it (keys in order):\n%s\n%s", url, o.Data, b)
		}
	}
	if len(byURL["/ours"]) != sent/2 || len(byURL["/pb"]) != sent/2 {
		t.Fatalf("%d and %d entries, want %d each", len(byURL["/ours"]), len(byURL["/pb"]), sent/2)
	}
}

// comparableData is an entry's data without what differs between two
// requests: the URL's group and the time taken (checked to be there).
func comparableData(t *testing.T, raw string) map[string]any {
	t.Helper()
	var data map[string]any
	if err := json.Unmarshal([]byte(raw), &data); err != nil {
		t.Fatal(err)
	}
	if ms, ok := data["execTime"].(float64); !ok || ms < 0 {
		t.Errorf("execTime %v in %s", data["execTime"], raw)
	}
	delete(data, "execTime")
	url, _ := data["url"].(string)
	_, data["url"], _ = strings.Cut(url[1:], "/")
	return data
}
