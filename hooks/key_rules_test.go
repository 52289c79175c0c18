package hooks_test

import (
	"bytes"
	"fmt"
	"mime/multipart"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/pocketbase/dbx"

	"petstore/internal/apikeys"
	"petstore/internal/audit"
	"petstore/testkit/apptest"
)

// dashboard saves records as PocketBase's dashboard does: the whole form,
// as JSON or as multipart/form-data (FormData), with a superuser's token.
type dashboard struct {
	*apptest.Server
	token string
}

func newDashboard(t *testing.T) dashboard {
	s := apptest.Start(t, "")
	return dashboard{s, s.StaffToken(t)}
}

// load is a record's form as the dashboard loads it.
func (d dashboard) load(t *testing.T, collection, id string) map[string]any {
	t.Helper()
	var form map[string]any
	r := d.Do(t, http.MethodGet, "/api/collections/"+collection+"/records/"+id, d.token, nil)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("load %s %s: %d %s", collection, id, r.StatusCode, r.Body)
	}
	r.JSON(t, &form)
	// A form is told from a fresher one by the record's updated date, which
	// moves in milliseconds: as with staff at a dashboard, any change comes
	// at least a millisecond after the form was loaded.
	time.Sleep(2 * time.Millisecond)
	return form
}

// save sends form with method to path, encoded as encoding ("JSON" or
// "FormData").
func (d dashboard) save(t *testing.T, method, path, encoding string, form map[string]any) *apptest.Response {
	t.Helper()
	if encoding == "JSON" {
		return d.Do(t, method, path, d.token, form)
	}
	var body bytes.Buffer
	w := multipart.NewWriter(&body)
	for name, value := range form {
		values := []any{value}
		switch v := value.(type) {
		case nil:
			values = []any{""}
		case []any: // a multiple select, one part per value, as the JS SDK sends it
			values = v
		case []string:
			values = nil
			for _, s := range v {
				values = append(values, s)
			}
		}
		for _, v := range values {
			if err := w.WriteField(name, fmt.Sprint(v)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return d.Do(t, method, path, d.token, body.Bytes(), "Content-Type", w.FormDataContentType())
}

// fieldError is a refused save's message, and its message about field.
func fieldError(t *testing.T, r *apptest.Response, field string) (message, about string) {
	t.Helper()
	var e struct {
		Message string                       `json:"message"`
		Data    map[string]map[string]string `json:"data"`
	}
	r.JSON(t, &e)
	return e.Message, e.Data[field]["message"]
}

// A revoked key cannot be brought back from the dashboard: not by
// clearing `revoked` on a fresh form, not by saving a form loaded before
// the revocation, as JSON or FormData, with the select field's empty value
// or a bool's false. The save is refused with why, and the key stays
// refused on /v1.
func TestRevocationIsFinalInTheDashboard(t *testing.T) {
	d := newDashboard(t)
	for _, encoding := range []string{"JSON", "FormData"} {
		for _, cleared := range []any{"", false} {
			for _, form := range []string{"fresh", "stale"} {
				t.Run(fmt.Sprintf("%s %v %s", encoding, cleared, form), func(t *testing.T) {
					key := d.NewKey(t, apikeys.NewKey{Name: "shop"})
					id := d.KeyRecord(t, key).Id
					stale := d.load(t, apikeys.Collection, id)
					if err := apikeys.Revoke(d.App, id, audit.CLI); err != nil {
						t.Fatal(err)
					}
					f := d.load(t, apikeys.Collection, id)
					if f[apikeys.RevokedField] != apikeys.RevokedValue {
						t.Fatalf("a revoked key's form has revoked %v, want %q", f[apikeys.RevokedField], apikeys.RevokedValue)
					}
					if form == "stale" {
						f = stale
						f["name"] = "renamed shop"
					}
					f[apikeys.RevokedField] = cleared
					r := d.save(t, http.MethodPatch, "/api/collections/api_keys/records/"+id, encoding, f)
					message, about := fieldError(t, r, apikeys.RevokedField)
					if r.StatusCode != http.StatusConflict || !strings.Contains(message, "revocation cannot be undone") || about != message {
						t.Errorf("save: %d %s, want 409 (a conflict) saying revocation cannot be undone, about revoked", r.StatusCode, r.Body)
					}
					stored := d.KeyRecord(t, key)
					if !stored.Revoked() || stored.Name() != "shop" {
						t.Errorf("stored revoked %q, name %q; want revoked and unchanged", stored.GetString(apikeys.RevokedField), stored.Name())
					}
					d.Do(t, http.MethodGet, "/v1/pets", key, nil).Error(t, http.StatusUnauthorized)
				})
			}
		}
	}
}

// Revoking in the dashboard works with the select field's value and with a
// bool's true, which scripts written for the former field send.
func TestRevokeInTheDashboard(t *testing.T) {
	d := newDashboard(t)
	for _, encoding := range []string{"JSON", "FormData"} {
		for _, value := range []any{apikeys.RevokedValue, true} {
			key := d.NewKey(t, apikeys.NewKey{Name: "shop"})
			id := d.KeyRecord(t, key).Id
			f := d.load(t, apikeys.Collection, id)
			f[apikeys.RevokedField] = value
			if r := d.save(t, http.MethodPatch, "/api/collections/api_keys/records/"+id, encoding, f); r.StatusCode != http.StatusOK {
				t.Fatalf("%s revoked=%v: %d %s", encoding, value, r.StatusCode, r.Body)
			}
			if got := d.KeyRecord(t, key).GetString(apikeys.RevokedField); got != apikeys.RevokedValue {
				t.Errorf("%s revoked=%v: stored %q", encoding, value, got)
			}
			d.Do(t, http.MethodGet, "/v1/pets", key, nil).Error(t, http.StatusUnauthorized)
		}
	}
}

// The expiry changes only through the expiry action (staff page, `keys
// expire`): a dashboard form, fresh or loaded before the expiry changed,
// leaves it as stored, so clearing an expired key's expiry there does not
// bring the key back.
func TestDashboardLeavesTheExpiry(t *testing.T) {
	d := newDashboard(t)
	for _, encoding := range []string{"JSON", "FormData"} {
		t.Run(encoding, func(t *testing.T) {
			// A stale form: loaded, then the expiry is moved, then the form is
			// saved with a new name.
			key := d.NewKey(t, apikeys.NewKey{Name: "shop", Expires: time.Now().Add(time.Hour)})
			id := d.KeyRecord(t, key).Id
			stale := d.load(t, apikeys.Collection, id)
			moved := time.Now().Add(48 * time.Hour).UTC().Truncate(time.Millisecond)
			if _, err := apikeys.Change(d.App, id, apikeys.Changes{Expires: &moved}, audit.CLI); err != nil {
				t.Fatal(err)
			}
			stale["name"] = "renamed"
			if r := d.save(t, http.MethodPatch, "/api/collections/api_keys/records/"+id, encoding, stale); r.StatusCode != http.StatusOK {
				t.Fatalf("stale save: %d %s", r.StatusCode, r.Body)
			}
			saved := d.KeyRecord(t, key)
			if saved.Name() != "renamed" || !saved.Expires().Equal(moved) {
				t.Errorf("after the stale save: name %q, expires %v; want renamed, %v", saved.Name(), saved.Expires(), moved)
			}

			// An expired key: clearing or moving its expiry on a fresh form
			// changes nothing.
			soon := time.Now().Add(300 * time.Millisecond)
			expiring := d.NewKey(t, apikeys.NewKey{Name: "shop", Expires: soon})
			expiringID := d.KeyRecord(t, expiring).Id
			time.Sleep(time.Until(soon) + 10*time.Millisecond)
			for _, value := range []any{"", time.Now().Add(time.Hour).UTC().Format("2006-01-02 15:04:05.000Z")} {
				f := d.load(t, apikeys.Collection, expiringID)
				f[apikeys.ExpiresField] = value
				d.save(t, http.MethodPatch, "/api/collections/api_keys/records/"+expiringID, encoding, f)
				if got := d.KeyRecord(t, expiring).GetDateTime(apikeys.ExpiresField).Time(); !got.Equal(soon.UTC().Truncate(time.Millisecond)) {
					t.Errorf("expires=%q saved in the dashboard: stored %v, want %v", value, got, soon)
				}
				d.Do(t, http.MethodGet, "/v1/pets", expiring, nil).Error(t, http.StatusUnauthorized)
			}
		})
	}
}

// Names and quotas saved in the dashboard keep the staff page's rules.
func TestDashboardKeyRules(t *testing.T) {
	d := newDashboard(t)
	key := d.NewKey(t, apikeys.NewKey{Name: "shop"})
	id := d.KeyRecord(t, key).Id
	for _, c := range []struct {
		name    string
		edit    map[string]any
		field   string
		message string
	}{
		{"empty name", map[string]any{"name": ""}, "name", "A name is required"},
		{"blank name", map[string]any{"name": "   "}, "name", "A name is required"},
		{"ESC in the name", map[string]any{"name": "\x1b[2Jgone"}, "name", "(it holds U+001B)"},
		{"RLO in the name", map[string]any{"name": "a\u202eb"}, "name", "(it holds U+202E)"},
		{"own per minute above own per day", map[string]any{"per_minute": 100, "per_day": 10}, "per_minute", "The per-minute quota, 100 (the key's own), is above the per-day quota, 10"},
		{"own per minute above the plan's per day", map[string]any{"per_minute": 1001}, "per_minute", "is above the per-day quota, 1000 (the plan's)"},
		{"per minute over its bound", map[string]any{"per_minute": apikeys.MaxPerMinute + 1, "per_day": apikeys.MaxPerDay}, "per_minute", "A per-minute quota is at most"},
	} {
		for _, encoding := range []string{"JSON", "FormData"} {
			t.Run(c.name+" "+encoding, func(t *testing.T) {
				before := d.KeyRecord(t, key).FieldsData()
				f := d.load(t, apikeys.Collection, id)
				for k, v := range c.edit {
					f[k] = v
				}
				r := d.save(t, http.MethodPatch, "/api/collections/api_keys/records/"+id, encoding, f)
				message, about := fieldError(t, r, c.field)
				if r.StatusCode != http.StatusBadRequest || !strings.Contains(message, c.message) || about != message {
					t.Errorf("%d %s, want 400 saying %q about %s", r.StatusCode, r.Body, c.message, c.field)
				}
				if after := d.KeyRecord(t, key).FieldsData(); fmt.Sprint(after) != fmt.Sprint(before) {
					t.Errorf("the refused save changed the key: %v, was %v", after, before)
				}
			})
		}
	}

	// A good edit is trimmed and saved.
	f := d.load(t, apikeys.Collection, id)
	f["name"], f["per_minute"], f["per_day"] = "  the shop  ", 100, 100
	if r := d.save(t, http.MethodPatch, "/api/collections/api_keys/records/"+id, "JSON", f); r.StatusCode != http.StatusOK {
		t.Fatalf("good edit: %d %s", r.StatusCode, r.Body)
	}
	if r := d.KeyRecord(t, key); r.Name() != "the shop" || r.PerMinute() != 100 {
		t.Errorf("saved %v", r.FieldsData())
	}
}

// A plan edited in the dashboard keeps per minute at most per day, for
// itself and for every key on it.
func TestDashboardPlanRules(t *testing.T) {
	d := newDashboard(t)
	free, err := d.App.FindFirstRecordByData("plans", "name", "free")
	if err != nil {
		t.Fatal(err)
	}
	path := "/api/collections/plans/records/" + free.Id
	d.NewKey(t, apikeys.NewKey{Name: "own quota", PerMinute: 100})

	for _, c := range []struct {
		name    string
		edit    map[string]any
		field   string
		message string
	}{
		{"per minute above per day", map[string]any{"per_minute": 2000}, "per_minute", "The per-minute quota, 2000, is above the per-day quota, 1000"},
		{"per day below a key's own per minute", map[string]any{"per_day": 99}, "per_day", "1 key(s) on this plan would get a per-minute quota above their per-day quota"},
	} {
		f := d.load(t, "plans", free.Id)
		for k, v := range c.edit {
			f[k] = v
		}
		r := d.save(t, http.MethodPatch, path, "JSON", f)
		message, about := fieldError(t, r, c.field)
		if r.StatusCode != http.StatusBadRequest || !strings.Contains(message, c.message) || about != message {
			t.Errorf("%s: %d %s, want 400 saying %q", c.name, r.StatusCode, r.Body, c.message)
		}
	}
	f := d.load(t, "plans", free.Id)
	f["per_day"] = 100
	if r := d.save(t, http.MethodPatch, path, "JSON", f); r.StatusCode != http.StatusOK {
		t.Errorf("per day down to the key's own per minute: %d %s", r.StatusCode, r.Body)
	}
}

// A new pet saved as the dashboard sends it, with only the fields staff
// touched: the errors say what to enter, not "Cannot be blank.".
func TestNewPetFormSaysWhatToEnter(t *testing.T) {
	d := newDashboard(t)
	for _, form := range []map[string]any{{}, {"status": "sold"}, {"name": "Rex", "categoryId": 0}} {
		r := d.save(t, http.MethodPost, "/api/collections/pets/records", "JSON", form)
		var e struct {
			Data map[string]map[string]string `json:"data"`
		}
		r.JSON(t, &e)
		if r.StatusCode != http.StatusBadRequest ||
			e.Data["categoryId"]["message"] != "Enter the animal's category: a whole number from 1 to 9007199254740991 (the categories collection names them)." {
			t.Errorf("%v: %d %s, want 400 saying what category to enter", form, r.StatusCode, r.Body)
		}
		if _, named := form["name"]; !named && e.Data["name"]["message"] != "Enter the animal's name: 1 to 100 characters." {
			t.Errorf("%v: %s, want it to say what name to enter", form, r.Body)
		}
	}
	if n := d.CountRecords(t, "pets"); n != 0 {
		t.Errorf("%d pets stored", n)
	}
	r := d.save(t, http.MethodPost, "/api/collections/pets/records", "FormData", map[string]any{"name": "Rex", "categoryId": 3})
	if r.StatusCode != http.StatusOK {
		t.Errorf("a pet with a name and a category: %d %s", r.StatusCode, r.Body)
	}
}

// The dashboard shows a key's scopes and cannot change them: a fresh form
// that widens them is refused, naming the scopes; a form loaded before staff
// narrowed them is saved with the scopes as stored (its other edits kept),
// as JSON or FormData, and the key stays refused where its scopes say. No
// scope change is audited.
func TestDashboardCannotChangeScopes(t *testing.T) {
	d := newDashboard(t)
	body := map[string]any{"name": "Rex", "categoryId": 1}
	for _, encoding := range []string{"JSON", "FormData"} {
		t.Run(encoding, func(t *testing.T) {
			narrow := d.NewKey(t, apikeys.NewKey{Scopes: []apikeys.Scope{apikeys.ScopePetsRead}})
			id := d.KeyRecord(t, narrow).Id
			fresh := d.load(t, apikeys.Collection, id)
			if got := fmt.Sprint(fresh[apikeys.ScopesField]); got != "[pets:read]" {
				t.Errorf("the dashboard shows scopes %s, want [pets:read]", got)
			}
			fresh[apikeys.ScopesField] = []string{"pets:read", "pets:write"}
			fresh[apikeys.NameField] = "widened?"
			r := d.save(t, http.MethodPatch, "/api/collections/api_keys/records/"+id, encoding, fresh)
			if message, about := fieldError(t, r, apikeys.ScopesField); r.StatusCode != http.StatusBadRequest || !strings.Contains(about, "change them on the staff page") || message != about {
				t.Fatalf("fresh save: %d %s; want 400 about scopes", r.StatusCode, r.Body)
			}

			wide := d.NewKey(t, apikeys.NewKey{})
			wideID := d.KeyRecord(t, wide).Id
			stale := d.load(t, apikeys.Collection, wideID)
			readOnly := []apikeys.Scope{apikeys.ScopePetsRead}
			if _, err := apikeys.Change(d.App, wideID, apikeys.Changes{Scopes: &readOnly}, audit.CLI); err != nil {
				t.Fatal(err)
			}
			stale[apikeys.NameField] = "renamed"
			if r := d.save(t, http.MethodPatch, "/api/collections/api_keys/records/"+wideID, encoding, stale); r.StatusCode != http.StatusOK {
				t.Fatalf("stale save: %d %s", r.StatusCode, r.Body)
			}

			for key, name := range map[string]string{narrow: "test key", wide: "renamed"} {
				k := d.KeyRecord(t, key)
				if got := k.Scopes(); len(got) != 1 || got[0] != apikeys.ScopePetsRead || k.Name() != name {
					t.Errorf("after the saves: scopes %v, name %q; want [pets:read], %q", got, k.Name(), name)
				}
				if r := d.Do(t, http.MethodPost, "/v1/pets", key, body); r.StatusCode != http.StatusForbidden {
					t.Errorf("create with the key: %d, want 403", r.StatusCode)
				}
			}
			var changes int
			err := d.App.DB().Select("count(*)").From(audit.Collection).
				Where(dbx.HashExp{audit.ActionField: string(audit.KeyScopesChanged)}).Row(&changes)
			if err != nil {
				t.Fatal(err)
			}
			if want := map[string]int{"JSON": 1, "FormData": 2}[encoding]; changes != want {
				t.Errorf("%d key.scopes_changed records, want %d (the staff's narrowing alone)", changes, want)
			}
		})
	}
}
