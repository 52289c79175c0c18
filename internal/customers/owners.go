package customers

import (
	"github.com/pocketbase/dbx"
	"github.com/pocketbase/pocketbase/core"

	"petstore/internal/apikeys"
	"petstore/internal/usage"
)

// Owner is a key as the usage export names it: its name, and the id and
// name of the customer it belongs to now ("" for none).
type Owner struct {
	KeyName      string `db:"key_name"`
	Customer     string `db:"customer"`
	CustomerName string `db:"customer_name"`
}

// OwnersIn is the owner of each key with use in rg (among rg.Keys, when
// it names them), by the key's record id: one query that reads those keys
// and their customers alone, whatever the number of keys.
func OwnersIn(app core.App, rg usage.Range) (map[string]Owner, error) {
	from, to := rg.Hours()
	hours := dbx.Params{"from": from, "to": to}
	q := app.DB().Select("k.id", "k.name AS key_name", "k.customer", "COALESCE(c."+NameField+", '') AS customer_name").
		From(apikeys.Collection+" k").
		LeftJoin(Collection+" c", dbx.NewExp("c.id = k.customer"))
	if rg.Keys == nil {
		// The range's hours, by the hour index.
		q.Where(dbx.NewExp("k.id IN (SELECT api_key FROM "+usage.Collection+" WHERE hour >= {:from} AND hour < {:to})", hours))
	} else {
		// The keys named, each by the (api_key, hour, ...) index.
		ids := make([]any, len(rg.Keys))
		for i, id := range rg.Keys {
			ids[i] = id
		}
		q.Where(dbx.In("k.id", ids...)).AndWhere(dbx.NewExp("EXISTS (SELECT 1 FROM "+usage.Collection+
			" u WHERE u.api_key = k.id AND u.hour >= {:from} AND u.hour < {:to})", hours))
	}
	var rows []struct {
		ID string `db:"id"`
		Owner
	}
	if err := q.All(&rows); err != nil {
		return nil, err
	}
	owners := make(map[string]Owner, len(rows))
	for _, r := range rows {
		owners[r.ID] = r.Owner
	}
	return owners, nil
}

// KeyIDs is the record id of every key of the customer with the given
// record id, revoked ones included.
func KeyIDs(app core.App, id string) ([]string, error) {
	ids := []string{}
	err := app.DB().Select("id").From(apikeys.Collection).Where(dbx.HashExp{apikeys.CustomerField: id}).Column(&ids)
	return ids, err
}
